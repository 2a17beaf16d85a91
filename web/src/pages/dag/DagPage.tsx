import { useTranslation } from 'react-i18next';
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
  const { t } = useTranslation(['dag', 'common']);
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

  const selectTab = (to: Tab) => {
    const next = new URLSearchParams(params);
    next.set('tab', to);
    setParams(next);
  };
  const selectRun = (id: number | null) => {
    const next = new URLSearchParams(params);
    if (id) next.set('run', String(id));
    else next.delete('run');
    setParams(next, { replace: true });
  };

  if (!Number.isFinite(dagId)) return <div className="page"><ErrorBox error={new Error(t('page.notADagId'))} /></div>;
  if (!dag.data) {
    return (
      <div className="page">
        {dag.error ? <ErrorBox error={dag.error} onRetry={dag.reload} /> : <Loading label={t('page.loading')} />}
      </div>
    );
  }
  const d = dag.data;
  return (
    <div className="page">
      <div className="crumbs">
        <Link to="/dags">{t('common:nav.dags')}</Link> /{' '}
        <Link to={`/dags?project=${d.projectId}`}>
          {projectName ? <span translate="no">{projectName}</span> : t('page.project', { id: d.projectId })}
        </Link>{' '}
        /
      </div>
      <div className="page-head">
        <h1 className="mono-title" data-testid="dag-name" translate="no">
          {d.name}
        </h1>
        <OnlineToggle
          dagId={d.id}
          online={d.online}
          onChanged={({ online }) => dag.setData((x) => ({ ...x, online }))}
        />
        {d.sourceFile && (
          <span className="tag tag-file" title={t('page.managedBy', { file: d.sourceFile })}>
            {t('page.fileManaged')}
          </span>
        )}
        <span className="muted small">
          {t('page.meta', { version: d.version, owner: d.owner ?? '—', max: d.maxActiveRuns, overlap: d.overlap, priority: d.firePriority })}
        </span>
        <div className="spacer" />
        {canTrigger && (
          <Link to={`/dags/${d.id}/trigger`} className="btn btn-primary" data-testid="trigger-button">
            {t('page.trigger')}
          </Link>
        )}
        {canBackfill && (
          <Link to={`/dags/${d.id}/backfill`} className="btn" data-testid="backfill-button">
            {t('page.backfill')}
          </Link>
        )}
        {canEdit && (
          <Link to={`/dags/${d.id}/edit`} className="btn" data-testid="edit-button">
            {t('page.edit')}
          </Link>
        )}
      </div>
      {d.description && (
        <p className="muted desc" translate="no">
          {d.description}
        </p>
      )}
      <div className="tabs" role="tablist">
        {TABS.map((name) => (
          <button
            key={name}
            type="button"
            role="tab"
            aria-selected={tab === name}
            className={`tab${tab === name ? ' active' : ''}`}
            onClick={() => selectTab(name)}
            data-testid={`tab-${name}`}
          >
            {t(`page.tabs.${name}`)}
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
