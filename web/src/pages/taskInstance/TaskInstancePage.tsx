import { useRef, useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { errorMessage } from '../../api/client';
import { getDag, getTaskInstance, killTask } from '../../api/endpoints';
import type { ExecutionDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { LogViewer } from '../../components/LogViewer';
import { ConfirmDialog } from '../../components/Modal';
import { StatusBadge } from '../../components/Status';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { durationMs, formatDuration, formatTime } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { isTerminalTask } from '../../lib/status';
import { useStream } from '../../live/stream';

export function TaskInstancePage() {
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
        {ti.error ? <ErrorBox error={ti.error} onRetry={ti.reload} /> : <Loading label="Loading task instance…" />}
      </div>
    );
  }
  const t = ti.data;
  const executions = t.executions;
  const latest = executions[executions.length - 1];
  const asked = params.get('attempt');
  const chosen: ExecutionDto | undefined =
    (asked !== null ? executions.find((e) => e.attempt === Number(asked)) : undefined) ?? latest;
  const outputs = Object.entries(t.outputs ?? {});
  const chooseAttempt = (attempt: number) => {
    const next = new URLSearchParams(params);
    next.set('attempt', String(attempt));
    setParams(next, { replace: true });
  };

  return (
    <div className="page">
      <div className="crumbs">
        <Link to="/dags">DAGs</Link> / <Link to={`/dags/${t.dagId}`}>{dag.data?.name ?? `DAG ${t.dagId}`}</Link> /{' '}
        <Link to={`/runs/${t.dagInstanceId}`}>run #{t.dagInstanceId}</Link> /
      </div>
      <div className="page-head">
        <h1 className="mono-title">{t.taskName}</h1>
        <StatusBadge status={t.status} testId="ti-status" />
        <span className="muted small">
          task instance #{t.id} · {t.bizDate} · {t.triggerType}
        </span>
        <div className="spacer" />
        {canKill && live && (
          <button type="button" className="btn btn-danger" onClick={() => setKilling(true)} data-testid="kill-task">
            ■ Kill task
          </button>
        )}
      </div>
      <dl className="facts">
        <div>
          <dt>Attempts</dt>
          <dd>
            {t.attempts} <span className="muted small">({t.retryCount} retries used)</span>
          </dd>
        </div>
        <div>
          <dt>Queue / priority</dt>
          <dd>
            {t.queue} / {t.priority}
          </dd>
        </div>
        <div>
          <dt>Runner</dt>
          <dd className="mono small">{t.workerId ?? '—'}</dd>
        </div>
        <div>
          <dt>Queued</dt>
          <dd className="mono small">{formatTime(t.queuedTime)}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd className="mono small">{formatTime(t.startTime)}</dd>
        </div>
        <div>
          <dt>Ended</dt>
          <dd className="mono small">{formatTime(t.endTime)}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd className="mono small">{formatDuration(durationMs(t.startTime, t.endTime, now))}</dd>
        </div>
        {(t.checks ?? 0) > 0 && (
          <div>
            <dt>Sensor checks</dt>
            <dd className="mono small" data-testid="ti-checks">
              {t.checks}
            </dd>
          </div>
        )}
        {t.nextCheckAt && (
          <div>
            <dt>Next check</dt>
            <dd className="mono small" data-testid="ti-next-check">
              {formatTime(t.nextCheckAt)}
            </dd>
          </div>
        )}
        {t.retryAt && (
          <div>
            <dt>Next retry</dt>
            <dd className="mono small">{formatTime(t.retryAt)}</dd>
          </div>
        )}
      </dl>
      {t.errorMessage && (
        // A waiting sensor's message says what its last check found: news, not an error.
        <div className={`banner ${t.status === 'UP_FOR_RESCHEDULE' ? 'banner-info' : 'banner-error'}`} data-testid="ti-error">
          {t.errorMessage}
        </div>
      )}

      <div className="two-col two-col-wide-left">
        <section className="panel">
          <div className="panel-head">
            <h2>Attempts</h2>
          </div>
          {executions.length === 0 ? (
            <Empty>No attempt has started yet ({t.status.toLowerCase()}).</Empty>
          ) : (
            <table className="table table-click" data-testid="attempts-table">
              <thead>
                <tr>
                  <th className="num">Attempt</th>
                  <th>Status</th>
                  <th className="num">Exit</th>
                  <th>Started</th>
                  <th className="num">Duration</th>
                  <th>Runner</th>
                  <th>Error</th>
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
                    <td className="mono small">{formatTime(e.startTime)}</td>
                    <td className="num mono small">
                      {formatDuration(e.durationMs ?? durationMs(e.startTime, e.endTime, now))}
                    </td>
                    <td className="mono small">{e.workerId}</td>
                    <td className="small ellipsis max-w-320" title={e.errorMessage ?? ''}>
                      {e.errorMessage ?? ''}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        <section className="panel">
          <div className="panel-head">
            <h2>Outputs</h2>
          </div>
          {outputs.length === 0 ? (
            <div className="muted small pad">
              None declared (<code>##dj-output name=value</code> lines or <code>$DJ_OUTPUT</code>).
            </div>
          ) : (
            <table className="table" data-testid="outputs-table">
              <tbody>
                {outputs.map(([k, v]) => (
                  <tr key={k}>
                    <td className="mono">{k}</td>
                    <td className="mono small break">{v}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      </div>

      <section className="panel">
        <div className="panel-head">
          <h2>Log</h2>
          {executions.length > 1 && (
            <div className="segmented small">
              {executions.map((e) => (
                <button
                  key={e.id}
                  type="button"
                  className={e.attempt === chosen?.attempt ? 'active' : ''}
                  onClick={() => chooseAttempt(e.attempt)}
                >
                  attempt {e.attempt + 1}
                </button>
              ))}
            </div>
          )}
        </div>
        {chosen ? (
          <LogViewer
            key={`${t.id}:${chosen.attempt}`}
            taskInstanceId={t.id}
            attempt={chosen.attempt}
            running={chosen.status === 'RUNNING' && !chosen.endTime}
            onEnded={() => ti.reload()}
          />
        ) : (
          <Empty>No log yet: the task has not started.</Empty>
        )}
      </section>

      {killing && (
        <ConfirmDialog
          title="Kill task"
          message={
            <>
              Kill <code>{t.taskName}</code> (its process group, if it runs)? A killed task is not retried.
            </>
          }
          confirmLabel="Kill task"
          danger
          busy={killBusy}
          error={killError && <div className="inline-error">{killError}</div>}
          testId="confirm-button"
          onClose={() => setKilling(false)}
          onConfirm={async () => {
            setKillBusy(true);
            setKillError(null);
            try {
              await killTask(t.id);
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
