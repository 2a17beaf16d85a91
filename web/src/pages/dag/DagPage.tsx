import { Link, useParams, useSearchParams } from 'react-router';
import { getDag, listProjects } from '../../api/endpoints';
import { useCan, useSession } from '../../auth/session';
import { OnlineToggle } from '../../components/OnlineToggle';
import { ErrorBox, Loading } from '../../components/States';
import { useAsync } from '../../lib/hooks';
import { DefinitionTab } from './DefinitionTab';
import { GraphTab } from './GraphTab';
import { GridTab } from './GridTab';
import { RunsTab } from './RunsTab';
import { SchedulesTab } from './SchedulesTab';

const TABS = ['grid', 'graph', 'runs', 'schedules', 'definition'] as const;
type Tab = (typeof TABS)[number];

export function DagPage() {
  const dagId = Number(useParams().dagId);
  const [params, setParams] = useSearchParams();
  const tab: Tab = (TABS as readonly string[]).includes(params.get('tab') ?? '')
    ? (params.get('tab') as Tab)
    : 'grid';
  const runParam = Number(params.get('run')) || null;
  const dag = useAsync(Number.isFinite(dagId) ? `dag:${dagId}` : null, (signal) => getDag(dagId, { signal }));
  const canTrigger = useCan('trigger');
  const canBackfill = useCan('backfill');
  const canEdit = useCan('editDag');
  const session = useSession();
  const projects = useAsync(session?.projectId ? null : 'projects', (signal) => listProjects({ signal }));
  const projectName = projects.data?.items.find((p) => p.id === dag.data?.projectId)?.name;

  const selectTab = (t: Tab) => {
    const next = new URLSearchParams(params);
    next.set('tab', t);
    setParams(next);
  };
  const selectRun = (id: number | null) => {
    const next = new URLSearchParams(params);
    if (id) next.set('run', String(id));
    else next.delete('run');
    setParams(next, { replace: true });
  };

  if (!Number.isFinite(dagId)) return <div className="page"><ErrorBox error={new Error('not a DAG id')} /></div>;
  if (!dag.data) {
    return (
      <div className="page">
        {dag.error ? <ErrorBox error={dag.error} onRetry={dag.reload} /> : <Loading label="Loading DAG…" />}
      </div>
    );
  }
  const d = dag.data;
  return (
    <div className="page">
      <div className="crumbs">
        <Link to="/dags">DAGs</Link> / <Link to={`/dags?project=${d.projectId}`}>{projectName ?? `project #${d.projectId}`}</Link> /
      </div>
      <div className="page-head">
        <h1 className="mono-title" data-testid="dag-name">{d.name}</h1>
        <OnlineToggle
          dagId={d.id}
          online={d.online}
          onChanged={({ online }) => dag.setData((x) => ({ ...x, online }))}
        />
        {d.sourceFile && (
          <span className="tag tag-file" title={d.sourceFile}>
            file-managed
          </span>
        )}
        <span className="muted small">
          v{d.version} · owner {d.owner ?? '—'} · max {d.maxActiveRuns} active ({d.overlap})
        </span>
        <div className="spacer" />
        {canTrigger && (
          <Link to={`/dags/${d.id}/trigger`} className="btn btn-primary" data-testid="trigger-button">
            ▶ Trigger
          </Link>
        )}
        {canBackfill && (
          <Link to={`/dags/${d.id}/backfill`} className="btn" data-testid="backfill-button">
            Backfill…
          </Link>
        )}
        {canEdit && (
          <Link to={`/dags/${d.id}/edit`} className="btn" data-testid="edit-button">
            Edit
          </Link>
        )}
      </div>
      {d.description && <p className="muted desc">{d.description}</p>}
      <div className="tabs" role="tablist">
        {TABS.map((t) => (
          <button
            key={t}
            type="button"
            role="tab"
            aria-selected={tab === t}
            className={`tab${tab === t ? ' active' : ''}`}
            onClick={() => selectTab(t)}
            data-testid={`tab-${t}`}
          >
            {t[0]!.toUpperCase() + t.slice(1)}
          </button>
        ))}
      </div>
      <div className="tab-body">
        {tab === 'grid' && <GridTab dagId={d.id} selectedRun={runParam} onSelectRun={selectRun} />}
        {tab === 'graph' && <GraphTab dagId={d.id} selectedRun={runParam} onSelectRun={selectRun} />}
        {tab === 'runs' && <RunsTab dagId={d.id} />}
        {tab === 'schedules' && <SchedulesTab dag={d} />}
        {tab === 'definition' && <DefinitionTab dag={d} />}
      </div>
    </div>
  );
}
