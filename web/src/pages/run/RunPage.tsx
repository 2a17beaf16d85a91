import { useMemo, useRef } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link, useNavigate, useParams } from 'react-router';
import { getCanvas, getDag, getGantt, getRun } from '../../api/endpoints';
import { DagGraph } from '../../components/DagGraph';
import { Gantt } from '../../components/Gantt';
import { StatusBadge } from '../../components/Status';
import { ErrorBox, Loading } from '../../components/States';
import { durationMs, formatDuration } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { isKnownTrigger, triggerLabel } from '../../lib/runs';
import { isTerminalRun } from '../../lib/status';
import { useStream } from '../../live/stream';
import { graphTasks, patchInstances, runStates } from '../dag/graphData';
import { RunActions } from './RunActions';
import { TaskInstanceTable } from './TaskInstanceTable';
import { Time } from '../../components/Time';

export function RunPage() {
  const { t } = useTranslation(['run', 'common']);
  const runId = Number(useParams().runId);
  const navigate = useNavigate();
  const run = useAsync(`run:${runId}`, (signal) => getRun(runId, { signal }));
  const dagId = run.data?.dagId ?? null;
  const dag = useAsync(dagId ? `dag:${dagId}` : null, (signal) => getDag(dagId!, { signal }));
  const canvas = useAsync(dagId ? `canvas:${dagId}` : null, (signal) => getCanvas(dagId!, { signal }));
  const gantt = useAsync(`gantt:${runId}`, (signal) => getGantt(runId, { signal }));
  const running = run.data ? !isTerminalRun(run.data.status) : false;
  const now = useNow(1000, running);

  // The Gantt is refetched at most once a second while events come in.
  const ganttTimer = useRef<number | null>(null);
  const refreshGantt = () => {
    if (ganttTimer.current !== null) return;
    ganttTimer.current = window.setTimeout(() => {
      ganttTimer.current = null;
      gantt.reload();
    }, 1000);
  };

  useStream({
    onTask: (event) => {
      if (event.runId !== runId) return;
      run.setData((r) => patchInstances(r, event));
      refreshGantt();
    },
    onRun: (event) => {
      if (event.id !== runId) return;
      run.setData((r) => ({ ...r, status: event.status, startTime: event.startTime, endTime: event.endTime }));
      refreshGantt();
    },
    onReconnect: () => {
      run.reload();
      gantt.reload();
    },
  });

  const tasks = useMemo(() => (canvas.data ? graphTasks(canvas.data, run.data) : []), [canvas.data, run.data]);
  const states = useMemo(() => (run.data ? runStates(run.data) : undefined), [run.data]);

  if (!run.data) {
    return (
      <div className="page">
        {run.error ? <ErrorBox error={run.error} onRetry={run.reload} /> : <Loading label={t('page.loading')} />}
      </div>
    );
  }
  const r = run.data;
  const params = Object.entries(r.runParams ?? {});
  return (
    <div className="page">
      <div className="crumbs">
        <Link to="/dags">{t('common:nav.dags')}</Link> /{' '}
        <Link
          to={`/dags/${r.dagId}?tab=grid&run=${r.id}`}
          data-testid="run-dag-link"
          translate={dag.data ? 'no' : undefined}
        >
          {dag.data?.name ?? t('page.dagFallback', { id: r.dagId })}
        </Link>{' '}
        /
      </div>
      <div className="page-head">
        <h1>
          <Trans t={t} i18nKey="page.title" values={{ id: r.id }} components={{ id: <span className="mono" /> }} />
        </h1>
        <StatusBadge status={r.status} testId="run-status" />
        <span className="muted small">{r.bizDate}</span>
        <div className="spacer" />
        <RunActions run={r} onDone={() => run.reload()} />
      </div>
      <dl className="facts">
        <div>
          <dt>{t('page.facts.bizDate')}</dt>
          <dd className="mono" data-testid="run-biz-date">
            {r.bizDate}
          </dd>
        </div>
        <div>
          <dt>{t('page.facts.trigger')}</dt>
          <dd translate={isKnownTrigger(r.triggerType) ? undefined : 'no'}>{triggerLabel(r.triggerType)}</dd>
        </div>
        <div>
          <dt>{t('page.facts.runKey')}</dt>
          <dd className="mono small" title={r.runKey} translate="no">
            {r.runKey}
          </dd>
        </div>
        <div>
          <dt>{t('page.facts.dagVersion')}</dt>
          <dd>{t('page.facts.version', { version: r.dagVersion })}</dd>
        </div>
        <div>
          <dt>{t('page.facts.started')}</dt>
          <dd className="mono small" data-testid="run-started">
            <Time iso={r.startTime} />
          </dd>
        </div>
        <div>
          <dt>{t('page.facts.ended')}</dt>
          <dd className="mono small"><Time iso={r.endTime} /></dd>
        </div>
        <div>
          <dt>{t('page.facts.duration')}</dt>
          <dd className="mono small">{formatDuration(durationMs(r.startTime, r.endTime, now))}</dd>
        </div>
        <div>
          <dt>{t('page.facts.params')}</dt>
          <dd>
            {params.length === 0 ? (
              <span className="muted">{t('page.facts.noParams')}</span>
            ) : (
              params.map(([k, v]) => (
                <span key={k} className="chip mono" translate="no">
                  {k}={String(v)}
                </span>
              ))
            )}
          </dd>
        </div>
        {r.allowedFailures.length > 0 && (
          <div>
            <dt>{t('page.facts.allowedFailures')}</dt>
            <dd data-testid="run-allowed-failures">
              {r.allowedFailures.map((task) => (
                <span key={task} className="chip mono" translate="no">
                  {task}
                </span>
              ))}
            </dd>
          </div>
        )}
      </dl>

      <div className="two-col">
        <section className="panel">
          <div className="panel-head">
            <h2>{t('page.graph')}</h2>
          </div>
          {canvas.data ? (
            <DagGraph tasks={tasks} edges={canvas.data.edges} states={states} height={360} onOpen={(id) => navigate(`/task-instances/${id}`)} />
          ) : canvas.error ? (
            <ErrorBox error={canvas.error} onRetry={canvas.reload} />
          ) : (
            <Loading />
          )}
        </section>
        <section className="panel">
          <div className="panel-head">
            <h2>{t('page.gantt')}</h2>
            <span className="muted small">{t('page.ganttNote')}</span>
          </div>
          {gantt.data ? (
            <Gantt attempts={gantt.data.attempts} runStart={gantt.data.startTime} />
          ) : gantt.error ? (
            <ErrorBox error={gantt.error} onRetry={gantt.reload} />
          ) : (
            <Loading />
          )}
        </section>
      </div>

      <section className="panel">
        <div className="panel-head">
          <h2>{t('page.taskInstances')}</h2>
          <span className="muted small">{r.taskInstances.length}</span>
        </div>
        <TaskInstanceTable instances={r.taskInstances} onChanged={() => run.reload()} />
      </section>
    </div>
  );
}
