import { listQueues, listRunners } from '../../api/endpoints';
import type { QueueDto, RunnerDto } from '../../api/types';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime, relativeTime } from '../../lib/format';
import { useAsync, useInterval, useNow, usePageVisible } from '../../lib/hooks';
import { backlogTotal, starvedQueues } from './queues';

const EVERY_MS = 5000;

export function RunnersPage() {
  const visible = usePageVisible();
  const runners = useAsync('runners', (signal) => listRunners({ signal }));
  const queues = useAsync('queues', (signal) => listQueues({ signal }));
  // Refreshed every 5 s, only while the page is visible.
  useInterval(
    () => {
      runners.reload();
      queues.reload();
    },
    EVERY_MS,
    visible,
  );
  const now = useNow(EVERY_MS, visible);
  const items = runners.data?.items ?? [];
  const slots = items.reduce((n, r) => n + r.slots, 0);
  const running = items.reduce((n, r) => n + r.running, 0);
  const loading = (runners.loading && runners.data) || (queues.loading && queues.data);
  return (
    <div className="page">
      <div className="page-head">
        <h1>Runners and queues</h1>
        {runners.data && (
          <span className="muted">
            {items.length} live · {running}/{slots} slots busy
          </span>
        )}
        <div className="spacer" />
        <span className="muted small">{visible ? 'refreshing every 5 s' : 'paused while hidden'}</span>
        {loading && <span className="spinner" aria-label="refreshing" />}
      </div>

      <section className="panel">
        <div className="panel-head">
          <h2>Queues</h2>
        </div>
        {!queues.data ? (
          queues.error ? (
            <ErrorBox error={queues.error} onRetry={queues.reload} />
          ) : (
            <Loading label="Loading queues…" />
          )
        ) : (
          <QueuesTable queues={queues.data.items} />
        )}
        {queues.data && queues.error ? (
          <ErrorBox error={queues.error} onRetry={queues.reload} title="Could not refresh" />
        ) : null}
      </section>

      <section className="panel">
        <div className="panel-head">
          <h2>Live runners</h2>
        </div>
        {!runners.data ? (
          runners.error ? (
            <ErrorBox error={runners.error} onRetry={runners.reload} />
          ) : (
            <Loading label="Loading runners…" />
          )
        ) : (
          <>
            {runners.error ? (
              <ErrorBox error={runners.error} onRetry={runners.reload} title="Could not refresh" />
            ) : null}
            {items.length === 0 ? (
              <Empty>No live runner: tasks stay QUEUED until one starts (datajump runner, or datajump up).</Empty>
            ) : (
              <RunnersTable runners={items} now={now} />
            )}
          </>
        )}
      </section>
    </div>
  );
}

function QueuesTable({ queues }: { queues: QueueDto[] }) {
  if (queues.length === 0) {
    return <Empty>No queue yet: queues appear when a DAG names one or a runner serves one.</Empty>;
  }
  const starved = starvedQueues(queues);
  return (
    <>
      {starved.length > 0 && (
        <div className="banner banner-warn" data-testid="starved-queues">
          No runner serves {starved.map((q) => `"${q.queue}"`).join(', ')}, where{' '}
          {starved.reduce((n, q) => n + q.queuedTasks, 0)} task(s) wait. Start one with{' '}
          <code>datajump runner --queues {starved.map((q) => q.queue).join(',')}</code>.
        </div>
      )}
      <table className="table" data-testid="queues-table">
        <thead>
          <tr>
            <th>Queue</th>
            <th>Served by</th>
            <th className="num">Slots</th>
            <th className="num">Queued</th>
            <th className="num">Running</th>
            <th>Backlog in JetStream (by priority)</th>
            <th className="num">Online DAGs</th>
          </tr>
        </thead>
        <tbody>
          {queues.map((q) => (
            <tr key={q.queue} data-testid="queue-row" data-queue={q.queue}>
              <td className="mono">{q.queue}</td>
              <td>
                {q.unserved ? (
                  <span className="tag tag-warn">no runner</span>
                ) : (
                  `${q.runners} runner${q.runners === 1 ? '' : 's'}`
                )}
              </td>
              <td className="num">{q.slots}</td>
              <td className="num">{q.queuedTasks}</td>
              <td className="num">{q.runningTasks}</td>
              <td>
                {q.backlog.length === 0 ? (
                  <span className="muted small">empty</span>
                ) : (
                  <span title={`${backlogTotal(q)} message(s) not yet taken`}>
                    {q.backlog.map((band) => (
                      <span
                        key={band.priority}
                        className="chip mono"
                        title={`priority ${band.priority}: ${band.pending} waiting, ${band.ackPending} taken and not yet acknowledged`}
                      >
                        p{band.priority}: {band.pending}
                        {band.ackPending > 0 ? ` +${band.ackPending} in flight` : ''}
                      </span>
                    ))}
                  </span>
                )}
              </td>
              <td className="num">{q.dags}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function RunnersTable({ runners, now }: { runners: RunnerDto[]; now: number }) {
  return (
    <table className="table" data-testid="runners-table">
      <thead>
        <tr>
          <th>Runner</th>
          <th>Queues</th>
          <th className="num">Slots</th>
          <th className="num">Running</th>
          <th>Load</th>
          <th>Version</th>
          <th>Last heartbeat</th>
        </tr>
      </thead>
      <tbody>
        {runners.map((r) => {
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
              <td
                className="small mono"
                title="Feature level: what this runner's build understands of DAGs; apply refuses features newer than a live runner of their queue"
              >
                {r.version ? `${r.version} · level ${r.featureLevel}` : 'older build'}
              </td>
              <td className="small" title={formatTime(r.lastSeen)}>
                {relativeTime(r.lastSeen, now)}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
