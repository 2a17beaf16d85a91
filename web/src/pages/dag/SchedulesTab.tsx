import { useState } from 'react';
import { Link } from 'react-router';
import { errorMessage } from '../../api/client';
import { deleteSchedule, listSchedules, setScheduleEnabled } from '../../api/endpoints';
import type { DagDetail, ScheduleDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { ConfirmDialog } from '../../components/Modal';
import { Empty, ErrorBox, InlineError, Loading } from '../../components/States';
import { conditionDatasets, describeCondition } from '../../lib/datasets';
import { formatZoned, relativeTime } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { ScheduleForm } from './ScheduleForm';

function trigger(s: ScheduleDto) {
  if (s.kind === 'EVENT') return <span>event <code>{s.eventName}</code></span>;
  if (s.kind === 'AFTER') return <span>after DAG <code>{s.after}</code></span>;
  if (s.kind === 'DATA' && s.on) {
    return (
      <span>
        when written: <code>{describeCondition(s.on)}</code>
        {s.onUpdate === 'rerun' && <span className="muted"> (reruns on restatement)</span>}{' '}
        {conditionDatasets(s.on).map((name) => (
          <Link key={name} to={`/datasets/${encodeURIComponent(name)}`} className="small">
            {name}{' '}
          </Link>
        ))}
      </span>
    );
  }
  return <code>{s.cronExpression}</code>;
}

export function SchedulesTab({ dag }: { dag: DagDetail }) {
  const list = useAsync(`schedules:${dag.id}`, (signal) => listSchedules(dag.id, { signal }));
  const canToggle = useCan('toggleSchedule');
  const canEdit = useCan('editSchedule') && !dag.sourceFile;
  const now = useNow(30_000);
  const [editing, setEditing] = useState<ScheduleDto | 'new' | null>(null);
  const [removing, setRemoving] = useState<ScheduleDto | null>(null);
  const [busy, setBusy] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);

  const replace = (s: ScheduleDto) =>
    list.setData((page) => {
      const at = page.items.findIndex((x) => x.scheduleId === s.scheduleId);
      if (at < 0) return { ...page, items: [...page.items, s], total: page.total + 1 };
      const items = [...page.items];
      items[at] = s;
      return { ...page, items };
    });

  const toggle = async (s: ScheduleDto) => {
    setBusy(s.scheduleId);
    setError(null);
    try {
      replace(await setScheduleEnabled(dag.id, s.scheduleId, !s.enabled));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };

  if (!list.data) {
    return list.error ? <ErrorBox error={list.error} onRetry={list.reload} /> : <Loading label="Loading schedules…" />;
  }
  return (
    <div>
      {dag.sourceFile && (
        <div className="banner banner-info">
          Schedules of this DAG come from <code>{dag.sourceFile}</code>: change them in the file. Pausing and resuming
          work here and survive re-applying the file.
        </div>
      )}
      <div className="toolbar">
        <span className="muted small">{list.data.total} schedule(s)</span>
        <div className="spacer" />
        {canEdit && (
          <button type="button" className="btn btn-primary btn-sm" onClick={() => setEditing('new')} data-testid="schedule-add">
            + Add schedule
          </button>
        )}
      </div>
      <InlineError error={error} />
      {list.data.items.length === 0 ? (
        <Empty>No schedules: this DAG runs only when triggered.</Empty>
      ) : (
        <table className="table" data-testid="schedules-table">
          <thead>
            <tr>
              <th>Enabled</th>
              <th>Name</th>
              <th>Trigger</th>
              <th>Meaning</th>
              <th>Zone</th>
              <th>Next fire</th>
              <th>Window</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((s) => (
              <tr key={s.scheduleId} data-testid="schedule-row" data-schedule={s.name} className={s.enabled ? '' : 'row-offline'}>
                <td>
                  {canToggle ? (
                    <button
                      type="button"
                      role="switch"
                      aria-checked={s.enabled}
                      className={`switch${s.enabled ? ' on' : ''}`}
                      disabled={busy === s.scheduleId}
                      onClick={() => toggle(s)}
                      title={s.enabled ? 'Pause' : 'Resume'}
                      data-testid="schedule-toggle"
                    >
                      <span className="switch-knob" />
                    </button>
                  ) : (
                    <span className={`tag ${s.enabled ? 'tag-on' : 'tag-muted'}`}>{s.enabled ? 'on' : 'paused'}</span>
                  )}
                </td>
                <td className="mono">{s.name}</td>
                <td>{trigger(s)}</td>
                <td>{s.cronDescription ?? <span className="muted">—</span>}</td>
                <td className="small">{s.timezone}</td>
                <td className="small">
                  {s.nextFireTime ? (
                    <span title={s.nextFireTime}>
                      {formatZoned(s.nextFireTime)} <span className="muted">({relativeTime(s.nextFireTime, now)})</span>
                    </span>
                  ) : (
                    <span className="muted">{s.enabled ? '—' : 'paused'}</span>
                  )}
                </td>
                <td className="small muted">
                  {s.startDate || s.endDate ? `${s.startDate ?? '…'} → ${s.endDate ?? '…'}` : 'always'} · offset {s.bizDateOffset}d
                  {s.kind === 'CRON' ? ` · catch-up ${s.catchup}` : ''}
                </td>
                <td className="col-actions">
                  {canEdit && (
                    <>
                      {s.kind === 'DATA' ? (
                        <span className="muted small" title="A data schedule's condition is changed in the DAG's definition">
                          edit in the definition
                        </span>
                      ) : (
                        <button type="button" className="btn btn-sm" onClick={() => setEditing(s)}>
                          Edit
                        </button>
                      )}
                      <button type="button" className="btn btn-sm btn-ghost-danger" onClick={() => setRemoving(s)}>
                        Remove
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing && (
        <ScheduleForm
          dagId={dag.id}
          schedule={editing === 'new' ? undefined : editing}
          onClose={() => setEditing(null)}
          onSaved={(s) => {
            replace(s);
            setEditing(null);
          }}
        />
      )}
      {removing && (
        <RemoveSchedule
          dagId={dag.id}
          schedule={removing}
          onClose={() => setRemoving(null)}
          onRemoved={() => {
            setRemoving(null);
            list.reload();
          }}
        />
      )}
    </div>
  );
}

function RemoveSchedule({
  dagId,
  schedule,
  onClose,
  onRemoved,
}: {
  dagId: number;
  schedule: ScheduleDto;
  onClose: () => void;
  onRemoved: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <ConfirmDialog
      title="Remove schedule"
      message={
        <>
          Remove schedule <code>{schedule.name}</code>? The runs it started stay.
        </>
      }
      confirmLabel="Remove"
      danger
      busy={busy}
      error={error && <div className="inline-error">{error}</div>}
      onClose={onClose}
      testId="confirm-button"
      onConfirm={async () => {
        setBusy(true);
        try {
          await deleteSchedule(dagId, schedule.scheduleId);
          onRemoved();
        } catch (e) {
          setError(errorMessage(e));
          setBusy(false);
        }
      }}
    />
  );
}
