import { sayProblem } from '../../lib/problem';
import { useEffect, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link, useLocation } from 'react-router';
import { errorMessage } from '../../api/client';
import { clearTask, markTask } from '../../api/endpoints';
import type { TaskInstanceDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { ConfirmDialog } from '../../components/Modal';
import { StatusBadge } from '../../components/Status';
import { durationMs, formatDuration, formatTime } from '../../lib/format';
import { useNow } from '../../lib/hooks';
import { itemsAnchor } from '../../lib/runs';
import { isTerminalTask } from '../../lib/status';
import { Time } from '../../components/Time';

type Bulk = 'clear' | 'success' | 'failed';

/** An instance the bulk action could not change, and why. */
interface Failure {
  task: string;
  error: string;
}

/** A run's task instances, with bulk clear and mark for operators. */
export function TaskInstanceTable({ instances, onChanged }: { instances: TaskInstanceDto[]; onChanged: () => void }) {
  const { t } = useTranslation('run');
  const canClear = useCan('clear');
  const canMark = useCan('mark');
  const canAct = canClear && canMark;
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set());
  const [downstream, setDownstream] = useState(false);
  const [asking, setAsking] = useState<Bulk | null>(null);
  const [busy, setBusy] = useState(false);
  const [failures, setFailures] = useState<Failure[]>([]);
  const live = instances.some((ti) => !isTerminalTask(ti.status) && ti.startTime);
  const now = useNow(1000, live);
  // The grid opens a mapped task at `#items-<task>`: its first item's row,
  // once the instances are here.
  const { hash } = useLocation();
  const loaded = instances.length > 0;
  useEffect(() => {
    if (loaded && hash) document.getElementById(decodeURIComponent(hash.slice(1)))?.scrollIntoView({ block: 'start' });
  }, [hash, loaded]);

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
    const failed: Failure[] = [];
    for (const ti of chosen) {
      try {
        if (bulk === 'clear') await clearTask(ti.id, { downstream });
        else await markTask(ti.id, { status: bulk === 'success' ? 'SUCCESS' : 'FAILED' });
      } catch (e) {
        failed.push({ task: ti.taskName, error: errorMessage(e) });
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
          <span className="muted small">{t('instances.selected', { n: chosen.length })}</span>
          <button type="button" className="btn btn-sm" disabled={!chosen.length} onClick={() => setAsking('clear')} data-testid="bulk-clear">
            {t('instances.bulk.clear')}
          </button>
          <label className="check small">
            <input type="checkbox" checked={downstream} onChange={(e) => setDownstream(e.target.checked)} data-testid="bulk-downstream" />
            {t('instances.withDownstream')}
          </label>
          <span className="sep" />
          <button type="button" className="btn btn-sm" disabled={!chosen.length} onClick={() => setAsking('success')} data-testid="bulk-mark-success">
            {t('instances.bulk.success')}
          </button>
          <button type="button" className="btn btn-sm" disabled={!chosen.length} onClick={() => setAsking('failed')} data-testid="bulk-mark-failed">
            {t('instances.bulk.failed')}
          </button>
        </div>
      )}
      {failures.length > 0 && (
        <div className="inline-error" role="alert">
          {t('instances.failures', { n: failures.length })}
          <ul className="error-details">
            {failures.map((f, i) => (
              <li key={i}>{t('instances.failure', { task: f.task, error: f.error })}</li>
            ))}
          </ul>
        </div>
      )}
      <div className="table-scroll">
        <table className="table" data-testid="ti-table">
          <thead>
            <tr>
              {canAct && (
                <th className="col-check">
                  <input
                    type="checkbox"
                    aria-label={t('instances.selectAll')}
                    checked={all}
                    onChange={() => setSelected(all ? new Set() : new Set(instances.map((ti) => ti.id)))}
                    data-testid="ti-select-all"
                  />
                </th>
              )}
              <th>{t('instances.columns.task')}</th>
              <th>{t('instances.columns.status')}</th>
              <th className="num">{t('instances.columns.attempts')}</th>
              <th>{t('instances.columns.started')}</th>
              <th>{t('instances.columns.ended')}</th>
              <th className="num">{t('instances.columns.duration')}</th>
              <th>{t('instances.columns.runner')}</th>
              <th>{t('instances.columns.queue')}</th>
              <th>{t('instances.columns.reason')}</th>
            </tr>
          </thead>
          <tbody>
            {instances.map((ti) => (
              <tr
                key={ti.id}
                id={ti.mapIndex === 0 ? itemsAnchor(ti.taskName) : undefined}
                data-testid="ti-row"
                data-task={ti.taskName}
                className={selected.has(ti.id) ? 'row-selected' : ''}
              >
                {canAct && (
                  <td className="col-check">
                    <input
                      type="checkbox"
                      aria-label={t('instances.select', { task: ti.taskName })}
                      checked={selected.has(ti.id)}
                      onChange={() => toggle(ti.id)}
                      data-testid="ti-select"
                    />
                  </td>
                )}
                <td>
                  <Link to={`/task-instances/${ti.id}`} className="mono" translate="no">
                    {ti.taskName}
                    {ti.mapIndex !== null && ti.mapIndex !== undefined && `[${ti.mapIndex}]`}
                  </Link>
                  {ti.mapItem !== null && ti.mapItem !== undefined && (
                    <span className="muted small ellipsis map-item" title={ti.mapItem} translate="no" data-testid="ti-map-item">
                      {ti.mapItem}
                    </span>
                  )}
                </td>
                <td>
                  <StatusBadge status={ti.status} />
                  {ti.retryAt && (
                    <span className="muted small">
                      {' '}
                      {t('instances.retryAt', { time: formatTime(ti.retryAt) })}
                    </span>
                  )}
                </td>
                <td className="num">{ti.attempts}</td>
                <td className="mono small"><Time iso={ti.startTime} /></td>
                <td className="mono small"><Time iso={ti.endTime} /></td>
                <td className="num mono small">{formatDuration(durationMs(ti.startTime, ti.endTime, now))}</td>
                <td className="mono small" translate="no">
                  {ti.workerId ?? '—'}
                </td>
                <td className="small" translate="no">
                  {ti.queue}
                </td>
                {/* The system's own words about what went wrong, in the reader's language where they have a code. */}
                <td className="small ellipsis max-w-320" title={ti.errorMessage ? sayProblem(ti.errorProblem, ti.errorMessage) : ''} data-server-text>
                  {ti.errorMessage ? sayProblem(ti.errorProblem, ti.errorMessage) : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {asking && (
        <ConfirmDialog
          title={t(`instances.bulk.${asking}`)}
          message={
            <Trans
              t={t}
              i18nKey={`instances.confirm.${asking === 'clear' && downstream ? 'clearDownstream' : asking}`}
              values={{ n: chosen.length, names: chosen.map((c) => c.taskName).join(', ') }}
              components={{ names: <span className="mono" translate="no" /> }}
            />
          }
          confirmLabel={t(`instances.bulk.${asking}`)}
          busy={busy}
          onConfirm={() => void run(asking)}
          onClose={() => setAsking(null)}
          testId="confirm-button"
        />
      )}
    </div>
  );
}
