// A run's attempts on a time axis: a row per task instance, a bar per
// attempt coloured by its status; hovering a bar shows its times.

import { useMemo } from 'react';
import { Link } from 'react-router';
import type { GanttAttempt } from '../api/types';
import { formatClock, formatDuration, formatTime } from '../lib/format';
import { ganttLayout } from '../lib/gantt';
import { useNow } from '../lib/hooks';
import { normalizeStatus, statusClass, statusLabel, statusStyle } from '../lib/status';

export function Gantt({ attempts, runStart }: { attempts: GanttAttempt[]; runStart: string | null }) {
  const open = attempts.some((a) => !a.endTime);
  const now = useNow(1000, open);
  const g = useMemo(() => ganttLayout(attempts, runStart, now), [attempts, runStart, now]);
  if (g.rows.length === 0) return <div className="state state-empty">No attempt has started yet.</div>;
  const span = g.max - g.min;
  const pct = (t: number) => `${((t - g.min) / span) * 100}%`;
  return (
    <div className="gantt" data-testid="gantt">
      <div className="gantt-axis">
        <div className="gantt-label" />
        <div className="gantt-track">
          {g.ticks.map((t) => (
            <span key={t} className="gantt-tick" style={{ left: pct(t) }}>
              {formatClock(new Date(t).toISOString())}
            </span>
          ))}
        </div>
      </div>
      {g.rows.map((row) => (
        <div className="gantt-row" key={row.taskInstanceId}>
          <div className="gantt-label ellipsis">
            <Link to={`/task-instances/${row.taskInstanceId}`}>{row.taskName}</Link>
          </div>
          <div className="gantt-track">
            {g.ticks.map((t) => (
              <span key={t} className="gantt-grid" style={{ left: pct(t) }} />
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
                    `${bar.taskName} · attempt ${bar.attempt + 1} · ${statusLabel(bar.status)}`,
                    `start ${formatTime(bar.startTime)}`,
                    `end   ${bar.open ? 'running' : formatTime(bar.endTime)}`,
                    `took  ${formatDuration(bar.end - bar.start)}`,
                    bar.workerId ? `runner ${bar.workerId}` : '',
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
        {formatTime(new Date(g.min).toISOString())} → {open ? 'now' : formatTime(new Date(g.max).toISOString())} ·{' '}
        {formatDuration(span)}
      </div>
    </div>
  );
}
