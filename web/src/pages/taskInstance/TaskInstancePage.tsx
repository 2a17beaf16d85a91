import { sayProblem } from '../../lib/problem';
import { useRef, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link, useParams, useSearchParams } from 'react-router';
import { errorMessage } from '../../api/client';
import { getDag, getTaskInstance, killTask } from '../../api/endpoints';
import type { ExecutionDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { LogViewer } from '../../components/LogViewer';
import { ConfirmDialog } from '../../components/Modal';
import { StatusBadge } from '../../components/Status';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { durationMs, formatDuration } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { isKnownTrigger, triggerLabel } from '../../lib/runs';
import { isTerminalTask, statusLabel } from '../../lib/status';
import { useStream } from '../../live/stream';
import { Time } from '../../components/Time';

export function TaskInstancePage() {
  const { t } = useTranslation(['task', 'common']);
  const id = Number(useParams().id);
  const [params, setParams] = useSearchParams();
  const ti = useAsync(`ti:${id}`, (signal) => getTaskInstance(id, { signal }));
  const dagId = ti.data?.dagId ?? null;
  const dag = useAsync(dagId ? `dag:${dagId}` : null, (signal) => getDag(dagId!, { signal }));
  const canKill = useCan('kill');
  const [killing, setKilling] = useState(false);
  const [killBusy, setKillBusy] = useState(false);
  const [killError, setKillError] = useState<string | null>(null);
  const live = ti.data ? !isTerminalTask(ti.data.status) : false;
  const now = useNow(1000, live);

  // Refetch (at most twice a second) when the stream says it changed.
  const timer = useRef<number | null>(null);
  const refresh = () => {
    if (timer.current !== null) return;
    timer.current = window.setTimeout(() => {
      timer.current = null;
      ti.reload();
    }, 500);
  };
  useStream({
    onTask: (event) => {
      if (event.id === id) refresh();
    },
    onReconnect: () => ti.reload(),
  });

  if (!ti.data) {
    return (
      <div className="page">
        {ti.error ? <ErrorBox error={ti.error} onRetry={ti.reload} /> : <Loading label={t('page.loading')} />}
      </div>
    );
  }
  const task = ti.data;
  const executions = task.executions;
  const latest = executions[executions.length - 1];
  const asked = params.get('attempt');
  const chosen: ExecutionDto | undefined =
    (asked !== null ? executions.find((e) => e.attempt === Number(asked)) : undefined) ?? latest;
  const outputs = Object.entries(task.outputs ?? {});
  const chooseAttempt = (attempt: number) => {
    const next = new URLSearchParams(params);
    next.set('attempt', String(attempt));
    setParams(next, { replace: true });
  };

  return (
    <div className="page">
      <div className="crumbs">
        <Link to="/dags">{t('common:nav.dags')}</Link> /{' '}
        <Link to={`/dags/${task.dagId}`} translate={dag.data ? 'no' : undefined}>
          {dag.data?.name ?? t('page.dagFallback', { id: task.dagId })}
        </Link>{' '}
        / <Link to={`/runs/${task.dagInstanceId}`}>{t('page.runCrumb', { id: task.dagInstanceId })}</Link> /
      </div>
      <div className="page-head">
        <h1 className="mono-title" translate="no">
          {task.taskName}
        </h1>
        <StatusBadge status={task.status} testId="ti-status" />
        <span className="muted small" translate={isKnownTrigger(task.triggerType) ? undefined : 'no'}>
          {t('page.subtitle', { id: task.id, bizDate: task.bizDate, trigger: triggerLabel(task.triggerType) })}
        </span>
        <div className="spacer" />
        {canKill && live && (
          <button type="button" className="btn btn-danger" onClick={() => setKilling(true)} data-testid="kill-task">
            {t('page.killButton')}
          </button>
        )}
      </div>
      <dl className="facts">
        <div>
          <dt>{t('page.facts.attempts')}</dt>
          <dd>
            {task.attempts} <span className="muted small">{t('page.facts.retriesUsed', { n: task.retryCount })}</span>
          </dd>
        </div>
        <div>
          <dt>{t('page.facts.queuePriority')}</dt>
          <dd>
            <span translate="no">{task.queue}</span> / {task.priority}
          </dd>
        </div>
        <div>
          <dt>{t('page.facts.runner')}</dt>
          <dd className="mono small" translate="no">
            {task.workerId ?? '—'}
          </dd>
        </div>
        <div>
          <dt>{t('page.facts.queued')}</dt>
          <dd className="mono small"><Time iso={task.queuedTime} /></dd>
        </div>
        <div>
          <dt>{t('page.facts.started')}</dt>
          <dd className="mono small"><Time iso={task.startTime} /></dd>
        </div>
        <div>
          <dt>{t('page.facts.ended')}</dt>
          <dd className="mono small"><Time iso={task.endTime} /></dd>
        </div>
        <div>
          <dt>{t('page.facts.duration')}</dt>
          <dd className="mono small">{formatDuration(durationMs(task.startTime, task.endTime, now))}</dd>
        </div>
        {(task.checks ?? 0) > 0 && (
          <div>
            <dt>{t('page.facts.sensorChecks')}</dt>
            <dd className="mono small" data-testid="ti-checks">
              {task.checks}
            </dd>
          </div>
        )}
        {task.nextCheckAt && (
          <div>
            <dt>{t('page.facts.nextCheck')}</dt>
            <dd className="mono small" data-testid="ti-next-check">
              <Time iso={task.nextCheckAt} />
            </dd>
          </div>
        )}
        {task.retryAt && (
          <div>
            <dt>{t('page.facts.nextRetry')}</dt>
            <dd className="mono small"><Time iso={task.retryAt} /></dd>
          </div>
        )}
      </dl>
      {task.errorMessage && (
        // A waiting sensor's message says what its last check found: news, not an error.
        // The system's own words, in the reader's language where they have a code.
        <div
          className={`banner ${task.status === 'UP_FOR_RESCHEDULE' ? 'banner-info' : 'banner-error'}`}
          data-testid="ti-error"
          data-server-text
        >
          {sayProblem(task.errorProblem, task.errorMessage)}
        </div>
      )}

      <div className="two-col two-col-wide-left">
        <section className="panel">
          <div className="panel-head">
            <h2>{t('page.attempts.title')}</h2>
          </div>
          {executions.length === 0 ? (
            <Empty>{t('page.attempts.none', { status: statusLabel(task.status) })}</Empty>
          ) : (
            <div className="table-scroll">
              <table className="table table-click" data-testid="attempts-table">
                <thead>
                  <tr>
                    <th className="num">{t('page.attempts.columns.attempt')}</th>
                    <th>{t('page.attempts.columns.status')}</th>
                    <th className="num">{t('page.attempts.columns.exit')}</th>
                    <th>{t('page.attempts.columns.started')}</th>
                    <th className="num">{t('page.attempts.columns.duration')}</th>
                    <th>{t('page.attempts.columns.runner')}</th>
                    <th>{t('page.attempts.columns.error')}</th>
                  </tr>
                </thead>
                <tbody>
                  {executions.map((e) => (
                    <tr
                      key={e.id}
                      className={e.attempt === chosen?.attempt ? 'row-selected' : ''}
                      onClick={() => chooseAttempt(e.attempt)}
                      data-testid="attempt-row"
                      data-attempt={e.attempt}
                    >
                      <td className="num mono">{e.attempt + 1}</td>
                      <td>
                        <StatusBadge status={e.status} />
                      </td>
                      <td className="num mono">{e.exitCode ?? '—'}</td>
                      <td className="mono small"><Time iso={e.startTime} /></td>
                      <td className="num mono small">
                        {formatDuration(e.durationMs ?? durationMs(e.startTime, e.endTime, now))}
                      </td>
                      <td className="mono small" translate="no">
                        {e.workerId}
                      </td>
                      <td className="small ellipsis max-w-320" title={e.errorMessage ? sayProblem(e.errorProblem, e.errorMessage) : ''} data-server-text>
                        {e.errorMessage ? sayProblem(e.errorProblem, e.errorMessage) : ''}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
        <section className="panel">
          <div className="panel-head">
            <h2>{t('page.outputs.title')}</h2>
          </div>
          {outputs.length === 0 ? (
            <div className="muted small pad">
              <Trans
                t={t}
                i18nKey="page.outputs.none"
                values={{ line: '##dj-output name=value', env: '$DJ_OUTPUT' }}
                components={{ line: <code translate="no" />, env: <code translate="no" /> }}
              />
            </div>
          ) : (
            <div className="table-scroll">
              <table className="table" data-testid="outputs-table">
                <tbody>
                  {outputs.map(([k, v]) => (
                    <tr key={k} translate="no">
                      <td className="mono">{k}</td>
                      <td className="mono small break">{v}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
      </div>

      <section className="panel">
        <div className="panel-head">
          <h2>{t('page.log.title')}</h2>
          {executions.length > 1 && (
            <div className="segmented small">
              {executions.map((e) => (
                <button
                  key={e.id}
                  type="button"
                  className={e.attempt === chosen?.attempt ? 'active' : ''}
                  onClick={() => chooseAttempt(e.attempt)}
                >
                  {t('page.log.attempt', { n: e.attempt + 1 })}
                </button>
              ))}
            </div>
          )}
        </div>
        {chosen ? (
          <LogViewer
            key={`${task.id}:${chosen.attempt}`}
            taskInstanceId={task.id}
            attempt={chosen.attempt}
            running={chosen.status === 'RUNNING' && !chosen.endTime}
            onEnded={() => ti.reload()}
          />
        ) : (
          <Empty>{t('page.log.none')}</Empty>
        )}
      </section>

      {killing && (
        <ConfirmDialog
          title={t('page.kill.title')}
          message={
            <Trans
              t={t}
              i18nKey="page.kill.message"
              values={{ task: task.taskName }}
              components={{ task: <code translate="no" /> }}
            />
          }
          confirmLabel={t('page.kill.confirm')}
          danger
          busy={killBusy}
          error={killError && <div className="inline-error">{killError}</div>}
          testId="confirm-button"
          onClose={() => setKilling(false)}
          onConfirm={async () => {
            setKillBusy(true);
            setKillError(null);
            try {
              await killTask(task.id);
              setKilling(false);
              ti.reload();
            } catch (e) {
              setKillError(errorMessage(e));
            } finally {
              setKillBusy(false);
            }
          }}
        />
      )}
    </div>
  );
}
