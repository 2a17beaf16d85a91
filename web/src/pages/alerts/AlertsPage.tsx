import { Fragment, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { errorMessage } from '../../api/client';
import { listAlerts, listDags } from '../../api/endpoints';
import type { AlertDto, DagListItem } from '../../api/types';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime } from '../../lib/format';
import { useAsync } from '../../lib/hooks';

/** DAGs whose alerts the "all DAGs" view reads, at most. */
const MAX_DAGS = 100;
const PER_DAG = 20;

type Row = AlertDto & { dag: DagListItem };

/** The alerts of every DAG (their latest), newest first, a few requests at a time. */
async function alertsOfAll(dags: DagListItem[], signal: AbortSignal): Promise<{ rows: Row[]; failed: string[] }> {
  const rows: Row[] = [];
  const failed: string[] = [];
  const queue = [...dags];
  const worker = async () => {
    for (let dag = queue.shift(); dag; dag = queue.shift()) {
      try {
        const page = await listAlerts(dag.id, 1, PER_DAG, { signal });
        for (const a of page.items) rows.push({ ...a, dag });
      } catch (e) {
        if (signal.aborted) throw e;
        failed.push(`${dag.name}: ${errorMessage(e)}`);
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
        <h1>Alerts</h1>
        <span className="muted">what was noticed, and how its webhooks answered</span>
        <div className="spacer" />
        {dags.data && (
          <select
            className="input"
            value={dagParam}
            onChange={(e) => setParams(e.target.value ? { dag: e.target.value } : {}, { replace: true })}
            data-testid="alerts-dag"
          >
            <option value="">All DAGs{dags.data.total > MAX_DAGS ? ` (first ${MAX_DAGS})` : ''}</option>
            {dags.data.items.map((d) => (
              <option key={d.id} value={d.id}>
                {d.name}
              </option>
            ))}
          </select>
        )}
        <button type="button" className="btn btn-sm" onClick={alerts.reload}>
          Refresh
        </button>
      </div>
      {dags.error ? (
        <ErrorBox error={dags.error} onRetry={dags.reload} />
      ) : !alerts.data ? (
        alerts.error ? <ErrorBox error={alerts.error} onRetry={alerts.reload} /> : <Loading label="Loading alerts…" />
      ) : (
        <>
          {alerts.data.failed.length > 0 && (
            <div className="inline-error">
              Some DAGs' alerts could not be read: {alerts.data.failed.join('; ')}
            </div>
          )}
          {alerts.data.rows.length === 0 ? (
            <Empty>No alerts. A DAG alerts when it names webhooks under alerts: in its definition.</Empty>
          ) : (
            <table className="table" data-testid="alerts-table">
              <thead>
                <tr>
                  <th>Noticed</th>
                  <th>DAG</th>
                  <th>Kind</th>
                  <th>Delivery</th>
                  <th>Run / task</th>
                  <th>Webhook</th>
                  <th className="num">Tries</th>
                  <th>Answer</th>
                </tr>
              </thead>
              <tbody>
                {alerts.data.rows.map((a) => (
                  <Fragment key={`${a.dag.id}:${a.id}`}>
                    <tr className="table-click" onClick={() => setOpen(open === a.id ? null : a.id)}>
                      <td className="mono small nowrap">{formatTime(a.createdAt)}</td>
                      <td>
                        <Link to={`/dags/${a.dag.id}`}>{a.dag.name}</Link>
                      </td>
                      <td className="mono small">{a.kind}</td>
                      <td>
                        <span className={`tag ${STATE_CLASS[a.status] ?? ''}`}>{a.status}</span>
                      </td>
                      <td className="small">
                        {a.runId && <Link to={`/runs/${a.runId}`}>run #{a.runId}</Link>}
                        {a.taskInstanceId && (
                          <>
                            {' · '}
                            <Link to={`/task-instances/${a.taskInstanceId}`}>task #{a.taskInstanceId}</Link>
                          </>
                        )}
                      </td>
                      <td className="mono small ellipsis max-w-260" title={a.webhook}>
                        {a.webhook}
                      </td>
                      <td className="num">{a.attempts}</td>
                      <td className="small ellipsis max-w-260" title={a.lastError ?? ''}>
                        {a.responseStatus ? <span className="mono">{a.responseStatus}</span> : null} {a.lastError ?? (a.sentAt ? `sent ${formatTime(a.sentAt)}` : '')}
                      </td>
                    </tr>
                    {open === a.id && (
                      <tr className="row-detail">
                        <td colSpan={8}>
                          <pre className="code code-sm">{JSON.stringify(a.payload, null, 2)}</pre>
                        </td>
                      </tr>
                    )}
                  </Fragment>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </div>
  );
}
