// A run's attempts on a time axis: a row per task instance, a bar per
// attempt coloured by its status; hovering a bar shows its times.

import { useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { Link } from 'react-router';
import type { GanttAttempt } from '../api/types';
import { formatClock, formatDuration, formatTime } from '../lib/format';
import { ganttLayout, tickCount } from '../lib/gantt';
import { useNow } from '../lib/hooks';
import { normalizeStatus, statusClass, statusLabel, statusStyle } from '../lib/status';

/** The width of `el`, followed as it changes; `null` until measured. */
function useWidth(el: HTMLElement | null): number | null {
  const [width, setWidth] = useState<number | null>(null);
  useEffect(() => {
    if (!el || typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(([entry]) => setWidth(entry ? entry.contentRect.width : null));
    observer.observe(el);
    return () => observer.disconnect();
  }, [el]);
  return width;
}

export function Gantt({ attempts, runStart }: { attempts: GanttAttempt[]; runStart: string | null }) {
  const { t } = useTranslation('dag');
  const open = attempts.some((a) => !a.endTime);
  const now = useNow(1000, open);
  // As many axis labels as the track has room for: fewer on a phone.
  const [axis, setAxis] = useState<HTMLDivElement | null>(null);
  const width = useWidth(axis);
  const labels = width === null ? undefined : tickCount(width);
  const g = useMemo(() => ganttLayout(attempts, runStart, now, labels), [attempts, runStart, now, labels]);
  if (g.rows.length === 0) return <div className="state state-empty">{t('gantt.empty')}</div>;
  const span = g.max - g.min;
  const pct = (time: number) => `${((time - g.min) / span) * 100}%`;
  return (
    <div className="gantt" data-testid="gantt">
      <div className="gantt-axis">
        <div className="gantt-label" />
        <div className="gantt-track" ref={setAxis}>
          {g.ticks.map((tick) => (
            <span key={tick} className="gantt-tick" style={{ left: pct(tick) }}>
              {formatClock(new Date(tick).toISOString())}
            </span>
          ))}
        </div>
      </div>
      {g.rows.map((row) => (
        <div className="gantt-row" key={row.taskInstanceId}>
          <div className="gantt-label ellipsis">
            <Link to={`/task-instances/${row.taskInstanceId}`} translate="no">
              {row.taskName}
            </Link>
          </div>
          <div className="gantt-track">
            {g.ticks.map((tick) => (
              <span key={tick} className="gantt-grid" style={{ left: pct(tick) }} />
            ))}
            {row.bars.map((bar) => {
              const s = statusStyle(bar.status);
              const width = Math.max(0.3, ((bar.end - bar.start) / span) * 100);
              return (
                <Link
                  key={bar.attempt}
                  to={`/task-instances/${bar.taskInstanceId}?attempt=${bar.attempt}`}
                  className={`gantt-bar ${statusClass(bar.status)}`}
                  style={{ left: pct(bar.start), width: `${width}%`, background: s.fill, borderColor: s.border }}
                  title={[
                    t('gantt.barTitle', { task: bar.taskName, attempt: bar.attempt + 1, status: statusLabel(bar.status) }),
                    t('gantt.start', { time: formatTime(bar.startTime) }),
                    bar.open ? t('gantt.endOpen') : t('gantt.end', { time: formatTime(bar.endTime) }),
                    t('gantt.took', { duration: formatDuration(bar.end - bar.start) }),
                    bar.workerId ? t('gantt.runner', { runner: bar.workerId }) : '',
                  ]
                    .filter(Boolean)
                    .join('\n')}
                  data-testid="gantt-bar"
                  data-task={bar.taskName}
                  data-attempt={bar.attempt}
                  data-status={normalizeStatus(bar.status)}
                />
              );
            })}
          </div>
        </div>
      ))}
      <div className="gantt-foot muted small">
        {open
          ? t('gantt.spanOpen', { from: formatTime(new Date(g.min).toISOString()), duration: formatDuration(span) })
          : t('gantt.span', {
              from: formatTime(new Date(g.min).toISOString()),
              to: formatTime(new Date(g.max).toISOString()),
              duration: formatDuration(span),
            })}
      </div>
    </div>
  );
}
