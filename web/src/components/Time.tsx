import { formatClock, formatTime, zoneLabel } from '../lib/format';
import { useTimeZone } from '../lib/timeZone';

/**
 * A moment in the chosen zone (`2026-12-03 02:00:00`, or the clock alone),
 * the zone and its offset on hover, the exact instant in `dateTime`.
 */
export function Time({ iso, clock = false, className }: { iso: string | null | undefined; clock?: boolean; className?: string }) {
  useTimeZone();
  if (!iso) return <span className={className}>—</span>;
  return (
    <time dateTime={iso} title={zoneLabel(iso)} className={className} translate="no">
      {clock ? formatClock(iso) : formatTime(iso)}
    </time>
  );
}
