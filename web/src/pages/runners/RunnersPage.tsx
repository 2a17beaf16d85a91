import { listRunners } from '../../api/endpoints';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime, relativeTime } from '../../lib/format';
import { useAsync, useInterval, useNow, usePageVisible } from '../../lib/hooks';

const EVERY_MS = 5000;

export function RunnersPage() {
  const visible = usePageVisible();
  const runners = useAsync('runners', (signal) => listRunners({ signal }));
  // Refreshed every 5 s, only while the page is visible.
  useInterval(() => runners.reload(), EVERY_MS, visible);
  const now = useNow(EVERY_MS, visible);
  const items = runners.data?.items ?? [];
  const slots = items.reduce((n, r) => n + r.slots, 0);
  const running = items.reduce((n, r) => n + r.running, 0);
  return (
    <div className="page">
      <div className="page-head">
        <h1>Runners</h1>
        {runners.data && (
          <span className="muted">
            {items.length} live · {running}/{slots} slots busy
          </span>
        )}
        <div className="spacer" />
        <span className="muted small">{visible ? 'refreshing every 5 s' : 'paused while hidden'}</span>
        {runners.loading && runners.data && <span className="spinner" aria-label="refreshing" />}
      </div>
      {!runners.data ? (
        runners.error ? <ErrorBox error={runners.error} onRetry={runners.reload} /> : <Loading label="Loading runners…" />
      ) : (
        <>
          {runners.error ? <ErrorBox error={runners.error} onRetry={runners.reload} title="Could not refresh" /> : null}
          {items.length === 0 ? (
            <Empty>No live runner: tasks stay QUEUED until one starts (datajump runner, or datajump up).</Empty>
          ) : (
            <table className="table" data-testid="runners-table">
              <thead>
                <tr>
                  <th>Runner</th>
                  <th>Queues</th>
                  <th className="num">Slots</th>
                  <th className="num">Running</th>
                  <th>Load</th>
                  <th>Last heartbeat</th>
                </tr>
              </thead>
              <tbody>
                {items.map((r) => {
                  const load = r.slots ? Math.min(1, r.running / r.slots) : 0;
                  return (
                    <tr key={r.id} data-testid="runner-row">
                      <td className="mono">{r.id}</td>
                      <td>
                        {r.queues.map((q) => (
                          <span key={q} className="chip mono">
                            {q}
                          </span>
                        ))}
                      </td>
                      <td className="num">{r.slots}</td>
                      <td className="num">{r.running}</td>
                      <td>
                        <span className="meter" title={`${Math.round(load * 100)}%`}>
                          <span className={`meter-fill${load >= 1 ? ' full' : ''}`} style={{ width: `${load * 100}%` }} />
                        </span>
                      </td>
                      <td className="small" title={formatTime(r.lastSeen)}>
                        {relativeTime(r.lastSeen, now)}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
        </>
      )}
    </div>
  );
}
