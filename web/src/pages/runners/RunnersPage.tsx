import { Trans, useTranslation } from 'react-i18next';
import { listQueues, listRunners } from '../../api/endpoints';
import type { QueueDto, RunnerDto } from '../../api/types';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime, relativeTime } from '../../lib/format';
import { useAsync, useInterval, useNow, usePageVisible } from '../../lib/hooks';
import { backlogTotal, starvedQueues } from './queues';

const EVERY_MS = 5000;

export function RunnersPage() {
  const { t } = useTranslation(['runners', 'common']);
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
        <h1>{t('page.title')}</h1>
        {runners.data && (
          <span className="muted">{t('page.summary', { live: items.length, running, slots })}</span>
        )}
        <div className="spacer" />
        <span className="muted small">{visible ? t('page.refreshing') : t('page.paused')}</span>
        {loading && <span className="spinner" aria-label={t('page.refreshingLabel')} />}
      </div>

      <section className="panel">
        <div className="panel-head">
          <h2>{t('queues.title')}</h2>
        </div>
        {!queues.data ? (
          queues.error ? (
            <ErrorBox error={queues.error} onRetry={queues.reload} />
          ) : (
            <Loading label={t('queues.loading')} />
          )
        ) : (
          <QueuesTable queues={queues.data.items} />
        )}
        {queues.data && queues.error ? (
          <ErrorBox error={queues.error} onRetry={queues.reload} title={t('common:states.couldNotRefresh')} />
        ) : null}
      </section>

      <section className="panel">
        <div className="panel-head">
          <h2>{t('runners.title')}</h2>
        </div>
        {!runners.data ? (
          runners.error ? (
            <ErrorBox error={runners.error} onRetry={runners.reload} />
          ) : (
            <Loading label={t('runners.loading')} />
          )
        ) : (
          <>
            {runners.error ? (
              <ErrorBox error={runners.error} onRetry={runners.reload} title={t('common:states.couldNotRefresh')} />
            ) : null}
            {items.length === 0 ? (
              <Empty>
                <Trans
                  t={t}
                  i18nKey="runners.empty"
                  values={{ runner: 'datajump runner', up: 'datajump up' }}
                  components={{ cmd: <span translate="no" /> }}
                />
              </Empty>
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
  const { t } = useTranslation(['runners', 'common']);
  if (queues.length === 0) {
    return <Empty>{t('queues.empty')}</Empty>;
  }
  const starved = starvedQueues(queues);
  return (
    <>
      {starved.length > 0 && (
        <div className="banner banner-warn" data-testid="starved-queues">
          <Trans
            t={t}
            i18nKey="queues.starved"
            values={{
              queues: starved.map((q) => `"${q.queue}"`).join(t('common:list.separator')),
              tasks: starved.reduce((n, q) => n + q.queuedTasks, 0),
              command: `datajump runner --queues ${starved.map((q) => q.queue).join(',')}`,
            }}
            components={{ queues: <span translate="no" />, code: <code translate="no" /> }}
          />
        </div>
      )}
      <div className="table-scroll">
        <table className="table" data-testid="queues-table">
          <thead>
            <tr>
              <th>{t('queues.columns.queue')}</th>
              <th>{t('queues.columns.servedBy')}</th>
              <th className="num">{t('queues.columns.slots')}</th>
              <th className="num">{t('queues.columns.queued')}</th>
              <th className="num">{t('queues.columns.running')}</th>
              <th>{t('queues.columns.backlog')}</th>
              <th className="num">{t('queues.columns.dags')}</th>
            </tr>
          </thead>
          <tbody>
            {queues.map((q) => (
              <tr key={q.queue} data-testid="queue-row" data-queue={q.queue}>
                <td className="mono" translate="no">
                  {q.queue}
                </td>
                <td>
                  {q.unserved ? (
                    <span className="tag tag-warn">{t('queues.noRunner')}</span>
                  ) : (
                    t('queues.runners', { count: q.runners })
                  )}
                </td>
                <td className="num">{q.slots}</td>
                <td className="num">{q.queuedTasks}</td>
                <td className="num">{q.runningTasks}</td>
                <td>
                  {q.backlog.length === 0 ? (
                    <span className="muted small">{t('queues.backlogEmpty')}</span>
                  ) : (
                    <span title={t('queues.backlogTotal', { messages: backlogTotal(q) })}>
                      {q.backlog.map((band) => (
                        <span
                          key={band.priority}
                          className="chip mono"
                          title={t('queues.band', {
                            priority: band.priority,
                            pending: band.pending,
                            ackPending: band.ackPending,
                          })}
                        >
                          {band.ackPending > 0
                            ? t('queues.chipInFlight', {
                                priority: band.priority,
                                pending: band.pending,
                                inFlight: band.ackPending,
                              })
                            : t('queues.chip', { priority: band.priority, pending: band.pending })}
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
      </div>
    </>
  );
}

function RunnersTable({ runners, now }: { runners: RunnerDto[]; now: number }) {
  const { t } = useTranslation('runners');
  return (
    <div className="table-scroll">
      <table className="table" data-testid="runners-table">
        <thead>
          <tr>
            <th>{t('runners.columns.runner')}</th>
            <th>{t('runners.columns.queues')}</th>
            <th className="num">{t('runners.columns.slots')}</th>
            <th className="num">{t('runners.columns.running')}</th>
            <th>{t('runners.columns.load')}</th>
            <th>{t('runners.columns.version')}</th>
            <th>{t('runners.columns.lastHeartbeat')}</th>
          </tr>
        </thead>
        <tbody>
          {runners.map((r) => {
            const load = r.slots ? Math.min(1, r.running / r.slots) : 0;
            return (
              <tr key={r.id} data-testid="runner-row">
                <td className="mono" translate="no">
                  {r.id}
                </td>
                <td>
                  {r.queues.map((q) => (
                    <span key={q} className="chip mono" translate="no">
                      {q}
                    </span>
                  ))}
                </td>
                <td className="num">{r.slots}</td>
                <td className="num">{r.running}</td>
                <td>
                  <span className="meter" title={t('runners.load', { percent: Math.round(load * 100) })}>
                    <span className={`meter-fill${load >= 1 ? ' full' : ''}`} style={{ width: `${load * 100}%` }} />
                  </span>
                </td>
                <td className="small mono" title={t('runners.featureLevel')}>
                  {r.version ? t('runners.version', { version: r.version, level: r.featureLevel }) : t('runners.olderBuild')}
                </td>
                <td className="small" title={formatTime(r.lastSeen)}>
                  {relativeTime(r.lastSeen, now)}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
