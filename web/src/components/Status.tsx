import type { CSSProperties } from 'react';
import { normalizeStatus, statusClass, statusLabel, statusStyle } from '../lib/status';

/** A status as a small coloured pill with its name. */
export function StatusBadge({ status, testId }: { status: string | null | undefined; testId?: string }) {
  const s = statusStyle(status);
  const style: CSSProperties = { background: s.fill, color: s.text, borderColor: s.border };
  return (
    <span
      className={`badge ${statusClass(status)}`}
      style={style}
      data-testid={testId}
      data-status={normalizeStatus(status)}
    >
      {statusLabel(status)}
    </span>
  );
}

/** A status as a small square (grid cells, run strips). */
export function StatusSquare({
  status,
  title,
  size = 14,
}: {
  status: string | null | undefined;
  title?: string;
  size?: number;
}) {
  const s = statusStyle(status);
  return (
    <span
      className={`sq ${statusClass(status)}`}
      style={{ background: s.fill, borderColor: s.border, width: size, height: size }}
      title={title ?? statusLabel(status)}
      data-status={normalizeStatus(status)}
    />
  );
}
