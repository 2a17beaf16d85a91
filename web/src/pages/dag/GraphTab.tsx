import { useMemo } from 'react';
import { useTranslation } from 'react-i18next';
import { Link, useNavigate } from 'react-router';
import { getGraph, getRun, listRuns } from '../../api/endpoints';
import { DagGraph } from '../../components/DagGraph';
import { StatusBadge } from '../../components/Status';
import { ErrorBox, Loading } from '../../components/States';
import { formatTime } from '../../lib/format';
import { useAsync } from '../../lib/hooks';
import { useStream } from '../../live/stream';
import { graphParts, patchInstances, runStates } from './graphData';
import { runFromEvent, triggerLabel } from '../../lib/runs';
import { statusLabel } from '../../lib/status';

export function GraphTab({
  dagId,
  selectedRun,
  onSelectRun,
}: {
  dagId: number;
  selectedRun: number | null;
  onSelectRun: (id: number | null) => void;
}) {
  const { t } = useTranslation('dag');
  const navigate = useNavigate();
  const graph = useAsync(`graph:${dagId}`, (signal) => getGraph(dagId, { signal }));
  const runs = useAsync(`runs:${dagId}`, (signal) => listRuns(dagId, 1, 25, { signal }));
  // The chosen run, else the latest.
  const runId = selectedRun ?? runs.data?.items[0]?.id ?? null;
  const run = useAsync(runId ? `run:${runId}` : null, (signal) => getRun(runId!, { signal }));

  useStream({
    onTask: (event) => {
      if (event.runId === runId) run.setData((r) => patchInstances(r, event));
    },
    onRun: (event) => {
      if (event.dagId !== dagId) return;
      runs.setData((page) => {
        const at = page.items.findIndex((r) => r.id === event.id);
        if (at >= 0) {
          const items = [...page.items];
          items[at] = { ...items[at]!, status: event.status, endTime: event.endTime };
          return { ...page, items };
        }
        const fresh = runFromEvent(event);
        return { ...page, items: [fresh, ...page.items].slice(0, 25), total: page.total + 1 };
      });
      if (event.id === runId) run.setData((r) => ({ ...r, status: event.status, endTime: event.endTime }));
    },
    onReconnect: () => {
      graph.reload();
      runs.reload();
      run.reload();
    },
  });

  const parts = useMemo(() => (graph.data ? graphParts(graph.data, run.data) : null), [graph.data, run.data]);
  const states = useMemo(() => (run.data ? runStates(run.data) : undefined), [run.data]);

  if (!parts) {
    return graph.error ? <ErrorBox error={graph.error} onRetry={graph.reload} /> : <Loading label={t('graph.loading')} />;
  }
  const runItems = runs.data?.items ?? [];
  const shownInList = runItems.some((r) => r.id === selectedRun);
  return (
    <div>
      <div className="toolbar">
        <label className="field-inline">
          <span>{t('graph.colouredBy')}</span>
          <select
            className="input"
            value={selectedRun ?? ''}
            onChange={(e) => onSelectRun(e.target.value ? Number(e.target.value) : null)}
            data-testid="graph-run-select"
          >
            {runItems.length === 0 && <option value="">{t('graph.noRuns')}</option>}
            {selectedRun && !shownInList && <option value={selectedRun}>{t('graph.runOnly', { id: selectedRun })}</option>}
            {runItems.map((r, i) => (
              <option key={r.id} value={i === 0 && selectedRun !== r.id ? '' : r.id}>
                {t(i === 0 ? 'graph.runOptionLatest' : 'graph.runOption', {
                  bizDate: r.bizDate,
                  status: statusLabel(r.status),
                  trigger: triggerLabel(r.triggerType),
                  id: r.id,
                })}
              </option>
            ))}
          </select>
        </label>
        {run.data && (
          <>
            <StatusBadge status={run.data.status} />
            <span className="muted small">{t('graph.started', { time: formatTime(run.data.startTime) })}</span>
            <Link to={`/runs/${run.data.id}`} className="small">
              {t('graph.openRun', { id: run.data.id })}
            </Link>
          </>
        )}
        {run.error ? <span className="inline-error">{String((run.error as Error).message)}</span> : null}
        <div className="spacer" />
        <span className="muted small">{t('graph.clickHint')}</span>
      </div>
      <DagGraph
        tasks={parts.tasks}
        stubs={parts.stubs}
        edges={parts.edges}
        states={states}
        height="calc(100vh - 250px)"
        onOpen={(id) => navigate(`/task-instances/${id}`)}
      />
    </div>
  );
}
