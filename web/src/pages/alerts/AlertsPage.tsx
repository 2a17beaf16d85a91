import { Fragment, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link, useSearchParams } from 'react-router';
import { errorMessage } from '../../api/client';
import { listAlerts, listDags } from '../../api/endpoints';
import type { AlertDto, DagListItem } from '../../api/types';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime } from '../../lib/format';
import { useAsync } from '../../lib/hooks';
import { Time } from '../../components/Time';

/** DAGs whose alerts the "all DAGs" view reads, at most. */
const MAX_DAGS = 100;
const PER_DAG = 20;

type Row = AlertDto & { dag: DagListItem };

/** A DAG whose alerts could not be read, and why. */
type Failure = { dag: string; message: string };

/** The alerts of every DAG (their latest), newest first, a few requests at a time. */
async function alertsOfAll(dags: DagListItem[], signal: AbortSignal): Promise<{ rows: Row[]; failed: Failure[] }> {
  const rows: Row[] = [];
  const failed: Failure[] = [];
  const queue = [...dags];
  const worker = async () => {
    for (let dag = queue.shift(); dag; dag = queue.shift()) {
      try {
        const page = await listAlerts(dag.id, 1, PER_DAG, { signal });
        for (const a of page.items) rows.push({ ...a, dag });
      } catch (e) {
        if (signal.aborted) throw e;
        failed.push({ dag: dag.name, message: errorMessage(e) });
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  rows.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id);
  return { rows, failed };
}

const STATE_CLASS: Record<string, string> = {
  SENT: 'tag-on',
  FAILED: 'tag-bad',
  PENDING: 'tag-warn',
  SENDING: 'tag-warn',
};

export function AlertsPage() {
  const { t } = useTranslation(['alerts', 'common']);
  const [params, setParams] = useSearchParams();
  const dagParam = params.get('dag') ?? '';
  const dags = useAsync('alert-dags', (signal) => listDags({ pageSize: MAX_DAGS }, { signal }));
  const alerts = useAsync(dags.data ? `alerts:${dagParam}` : null, async (signal) => {
    const all = dags.data!.items;
    const chosen = dagParam ? all.filter((d) => String(d.id) === dagParam) : all;
    return alertsOfAll(chosen, signal);
  });
  const [open, setOpen] = useState<number | null>(null);

  return (
    <div className="page">
      <div className="page-head">
        <h1>{t('page.title')}</h1>
        <span className="muted">{t('page.subtitle')}</span>
        <div className="spacer" />
        {dags.data && (
          <select
            className="input"
            value={dagParam}
            onChange={(e) => setParams(e.target.value ? { dag: e.target.value } : {}, { replace: true })}
            data-testid="alerts-dag"
          >
            <option value="">
              {dags.data.total > MAX_DAGS ? t('page.allDagsFirst', { max: MAX_DAGS }) : t('page.allDags')}
            </option>
            {dags.data.items.map((d) => (
              <option key={d.id} value={d.id} translate="no">
                {d.name}
              </option>
            ))}
          </select>
        )}
        <button type="button" className="btn btn-sm" onClick={alerts.reload}>
          {t('page.refresh')}
        </button>
      </div>
      {dags.error ? (
        <ErrorBox error={dags.error} onRetry={dags.reload} />
      ) : !alerts.data ? (
        alerts.error ? <ErrorBox error={alerts.error} onRetry={alerts.reload} /> : <Loading label={t('page.loading')} />
      ) : (
        <>
          {alerts.data.failed.length > 0 && (
            <div className="inline-error">
              {t('page.someFailed', {
                failures: alerts.data.failed
                  .map((f) => t('page.failure', { dag: f.dag, message: f.message }))
                  .join(t('common:list.semicolon')),
              })}
            </div>
          )}
          {alerts.data.rows.length === 0 ? (
            <Empty>
              <Trans
                t={t}
                i18nKey="page.empty"
                values={{ field: 'alerts:' }}
                components={{ field: <span translate="no" /> }}
              />
            </Empty>
          ) : (
            <div className="table-scroll">
              <table className="table" data-testid="alerts-table">
                <thead>
                  <tr>
                    <th>{t('columns.noticed')}</th>
                    <th>{t('columns.dag')}</th>
                    <th>{t('columns.kind')}</th>
                    <th>{t('columns.delivery')}</th>
                    <th>{t('columns.runTask')}</th>
                    <th>{t('columns.webhook')}</th>
                    <th className="num">{t('columns.tries')}</th>
                    <th>{t('columns.answer')}</th>
                  </tr>
                </thead>
                <tbody>
                  {alerts.data.rows.map((a) => (
                    <Fragment key={`${a.dag.id}:${a.id}`}>
                      <tr className="table-click" onClick={() => setOpen(open === a.id ? null : a.id)}>
                        <td className="mono small nowrap"><Time iso={a.createdAt} /></td>
                        <td>
                          <Link to={`/dags/${a.dag.id}`} translate="no">
                            {a.dag.name}
                          </Link>
                        </td>
                        <td className="mono small">{t(`kind.${a.kind}`)}</td>
                        <td>
                          <span className={`tag ${STATE_CLASS[a.status] ?? ''}`}>{t(`state.${a.status}`)}</span>
                        </td>
                        <td className="small">
                          {a.runId && <Link to={`/runs/${a.runId}`}>{t('run', { id: a.runId })}</Link>}
                          {a.taskInstanceId && (
                            <>
                              {' · '}
                              <Link to={`/task-instances/${a.taskInstanceId}`}>{t('task', { id: a.taskInstanceId })}</Link>
                            </>
                          )}
                        </td>
                        <td className="mono small ellipsis max-w-260" title={a.webhook} translate="no">
                          {a.webhook}
                        </td>
                        <td className="num">{a.attempts}</td>
                        <td className="small ellipsis max-w-260" title={a.lastError ?? ''}>
                          {a.responseStatus ? <span className="mono">{a.responseStatus}</span> : null}{' '}
                          {typeof a.lastError === 'string' ? (
                            <span data-server-text>{a.lastError}</span>
                          ) : a.sentAt ? (
                            t('sent', { time: formatTime(a.sentAt) })
                          ) : (
                            ''
                          )}
                        </td>
                      </tr>
                      {open === a.id && (
                        <tr className="row-detail">
                          <td colSpan={8}>
                            <pre className="code code-sm" translate="no">
                              {JSON.stringify(a.payload, null, 2)}
                            </pre>
                          </td>
                        </tr>
                      )}
                    </Fragment>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </div>
  );
}
