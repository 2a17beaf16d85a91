import { useState } from 'react';
import { Link } from 'react-router';
import { errorMessage } from '../../api/client';
import { clearTask, markTask } from '../../api/endpoints';
import type { TaskInstanceDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { ConfirmDialog } from '../../components/Modal';
import { StatusBadge } from '../../components/Status';
import { durationMs, formatDuration, formatTime } from '../../lib/format';
import { useNow } from '../../lib/hooks';
import { isTerminalTask } from '../../lib/status';

type Bulk = 'clear' | 'success' | 'failed';

const LABEL: Record<Bulk, string> = {
  clear: 'Clear',
  success: 'Mark success',
  failed: 'Mark failed',
};

/** A run's task instances, with bulk clear and mark for operators. */
export function TaskInstanceTable({ instances, onChanged }: { instances: TaskInstanceDto[]; onChanged: () => void }) {
  const canClear = useCan('clear');
  const canMark = useCan('mark');
  const canAct = canClear && canMark;
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set());
  const [downstream, setDownstream] = useState(false);
  const [asking, setAsking] = useState<Bulk | null>(null);
  const [busy, setBusy] = useState(false);
  const [failures, setFailures] = useState<string[]>([]);
  const live = instances.some((ti) => !isTerminalTask(ti.status) && ti.startTime);
  const now = useNow(1000, live);

  const chosen = instances.filter((ti) => selected.has(ti.id));
  const all = instances.length > 0 && chosen.length === instances.length;
  const toggle = (id: number) =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const run = async (bulk: Bulk) => {
    setBusy(true);
    const failed: string[] = [];
    for (const ti of chosen) {
      try {
        if (bulk === 'clear') await clearTask(ti.id, { downstream });
        else await markTask(ti.id, { status: bulk === 'success' ? 'SUCCESS' : 'FAILED' });
      } catch (e) {
        failed.push(`${ti.taskName}: ${errorMessage(e)}`);
      }
    }
    setBusy(false);
    setFailures(failed);
    setAsking(null);
    if (failed.length === 0) setSelected(new Set());
    onChanged();
  };

  return (
    <div>
      {canAct && (
        <div className="bulkbar" data-testid="bulk-bar">
          <span className="muted small">{chosen.length} selected</span>
          <button type="button" className="btn btn-sm" disabled={!chosen.length} onClick={() => setAsking('clear')} data-testid="bulk-clear">
            Clear
          </button>
          <label className="check small">
            <input type="checkbox" checked={downstream} onChange={(e) => setDownstream(e.target.checked)} data-testid="bulk-downstream" />
            with downstream
          </label>
          <span className="sep" />
          <button type="button" className="btn btn-sm" disabled={!chosen.length} onClick={() => setAsking('success')} data-testid="bulk-mark-success">
            Mark success
          </button>
          <button type="button" className="btn btn-sm" disabled={!chosen.length} onClick={() => setAsking('failed')} data-testid="bulk-mark-failed">
            Mark failed
          </button>
        </div>
      )}
      {failures.length > 0 && (
        <div className="inline-error" role="alert">
          {failures.length} did not go through:
          <ul className="error-details">
            {failures.map((f, i) => (
              <li key={i}>{f}</li>
            ))}
          </ul>
        </div>
      )}
      <table className="table" data-testid="ti-table">
        <thead>
          <tr>
            {canAct && (
              <th className="col-check">
                <input
                  type="checkbox"
                  aria-label="Select all"
                  checked={all}
                  onChange={() => setSelected(all ? new Set() : new Set(instances.map((ti) => ti.id)))}
                  data-testid="ti-select-all"
                />
              </th>
            )}
            <th>Task</th>
            <th>Status</th>
            <th className="num">Attempts</th>
            <th>Started</th>
            <th>Ended</th>
            <th className="num">Duration</th>
            <th>Runner</th>
            <th>Queue</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {instances.map((ti) => (
            <tr key={ti.id} data-testid="ti-row" data-task={ti.taskName} className={selected.has(ti.id) ? 'row-selected' : ''}>
              {canAct && (
                <td className="col-check">
                  <input
                    type="checkbox"
                    aria-label={`Select ${ti.taskName}`}
                    checked={selected.has(ti.id)}
                    onChange={() => toggle(ti.id)}
                    data-testid="ti-select"
                  />
                </td>
              )}
              <td>
                <Link to={`/task-instances/${ti.id}`} className="mono">
                  {ti.taskName}
                </Link>
              </td>
              <td>
                <StatusBadge status={ti.status} />
                {ti.retryAt && <span className="muted small"> retry {formatTime(ti.retryAt)}</span>}
              </td>
              <td className="num">{ti.attempts}</td>
              <td className="mono small">{formatTime(ti.startTime)}</td>
              <td className="mono small">{formatTime(ti.endTime)}</td>
              <td className="num mono small">{formatDuration(durationMs(ti.startTime, ti.endTime, now))}</td>
              <td className="mono small">{ti.workerId ?? '—'}</td>
              <td className="small">{ti.queue}</td>
              <td className="small ellipsis max-w-320" title={ti.errorMessage ?? ''}>
                {ti.errorMessage ?? ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {asking && (
        <ConfirmDialog
          title={LABEL[asking]}
          message={
            <>
              {LABEL[asking]} {chosen.length} task instance(s)
              {asking === 'clear' && downstream ? ' and everything downstream of them' : ''}:{' '}
              <span className="mono">{chosen.map((c) => c.taskName).join(', ')}</span>?
            </>
          }
          confirmLabel={LABEL[asking]}
          busy={busy}
          onConfirm={() => void run(asking)}
          onClose={() => setAsking(null)}
          testId="confirm-button"
        />
      )}
    </div>
  );
}
