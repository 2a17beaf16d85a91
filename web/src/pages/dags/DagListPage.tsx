import { useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { Link, useSearchParams } from 'react-router';
import { listDags, listProjects } from '../../api/endpoints';
import type { DagListItem, Page, RecentRun, RunEvent } from '../../api/types';
import { useCan, useSession } from '../../auth/session';
import { OnlineToggle } from '../../components/OnlineToggle';
import { Pager } from '../../components/Pager';
import { RunStrip } from '../../components/RunStrip';
import { ScheduleLine } from '../../components/ScheduleSummary';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { useAsync, useDebounced, useNow } from '../../lib/hooks';
import { isFailure } from '../../lib/status';
import { useStream } from '../../live/stream';

const PAGE_SIZE = 50;

/** The command that applies a DAG file, shown as is in every language. */
const APPLY_COMMAND = 'datajump dag apply -f my_dag.yaml';

/** A DAG list item's strip with a run event applied (newest first, ≤ 10). */
export function patchRecentRuns(runs: RecentRun[], event: RunEvent): RecentRun[] {
  const at = runs.findIndex((r) => r.id === event.id);
  if (at >= 0) {
    if (runs[at]!.status === event.status) return runs;
    const next = [...runs];
    next[at] = { ...runs[at]!, status: event.status, bizDate: event.bizDate };
    return next;
  }
  return [{ id: event.id, status: event.status, bizDate: event.bizDate }, ...runs]
    .sort((a, b) => b.id - a.id)
    .slice(0, 10);
}

export function DagListPage() {
  const { t } = useTranslation(['dags', 'common']);
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const canCreate = useCan('createDag');
  const canTrigger = useCan('trigger');
  const now = useNow(30_000);

  const page = Math.max(1, Number(params.get('page')) || 1);
  const project = params.get('project') ?? '';
  const stateFilter = params.get('state') ?? 'all';
  const failing = params.get('failing') === '1';
  const [searchText, setSearchText] = useState(params.get('q') ?? '');
  const search = useDebounced(searchText.trim(), 300);

  const set = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === null || v === '') next.delete(k);
      else next.set(k, v);
    }
    setParams(next, { replace: true });
  };

  const projects = useAsync(session?.projectId ? null : 'projects', (signal) => listProjects({ signal }));
  const query = {
    projectId: project ? Number(project) : undefined,
    page,
    pageSize: PAGE_SIZE,
    search: search || undefined,
  };
  const dags = useAsync(JSON.stringify(query), (signal) => listDags(query, { signal }));

  useStream({
    onRun: (event) =>
      dags.setData((data: Page<DagListItem>) => {
        if (!data.items.some((d) => d.id === event.dagId)) return data;
        return {
          ...data,
          items: data.items.map((d) =>
            d.id === event.dagId ? { ...d, recentRuns: patchRecentRuns(d.recentRuns ?? [], event) } : d,
          ),
        };
      }),
    onReconnect: () => dags.reload(),
  });

  const rows = useMemo(() => {
    const items = dags.data?.items ?? [];
    return items.filter((d) => {
      if (stateFilter === 'online' && !d.online) return false;
      if (stateFilter === 'offline' && d.online) return false;
      if (failing && !(d.recentRuns ?? []).some((r) => isFailure(r.status))) return false;
      return true;
    });
  }, [dags.data, stateFilter, failing]);

  const projectName = (id: number) => projects.data?.items.find((p) => p.id === id)?.name ?? `#${id}`;
  const filtered = stateFilter !== 'all' || failing;

  return (
    <div className="page">
      <div className="page-head">
        <h1>{t('list.title')}</h1>
        {dags.data && <span className="muted count">{dags.data.total}</span>}
        <div className="spacer" />
        {canCreate && (
          <Link to="/dags/new" className="btn btn-primary" data-testid="new-dag">
            {t('list.newDag')}
          </Link>
        )}
      </div>
      <div className="toolbar">
        <input
          type="search"
          className="input search"
          placeholder={t('list.searchPlaceholder')}
          value={searchText}
          onChange={(e) => {
            setSearchText(e.target.value);
            if (page !== 1) set({ page: null });
          }}
          onBlur={() => set({ q: searchText.trim() || null })}
          data-testid="dag-search"
        />
        {projects.data && projects.data.items.length > 1 && (
          <select className="input" value={project} onChange={(e) => set({ project: e.target.value, page: null })}>
            <option value="">{t('list.defaultProject')}</option>
            {projects.data.items.map((p) => (
              <option key={p.id} value={p.id} translate="no">
                {p.name}
              </option>
            ))}
          </select>
        )}
        <div className="segmented" role="group" aria-label={t('list.onlineFilter')}>
          {(['all', 'online', 'offline'] as const).map((s) => (
            <button
              key={s}
              type="button"
              className={stateFilter === s ? 'active' : ''}
              onClick={() => set({ state: s === 'all' ? null : s })}
              data-testid={`filter-${s}`}
            >
              {t(`list.filter.${s}`)}
            </button>
          ))}
        </div>
        <label className="check">
          <input
            type="checkbox"
            checked={failing}
            onChange={(e) => set({ failing: e.target.checked ? '1' : null })}
            data-testid="filter-failing"
          />
          {t('list.hasFailures')}
        </label>
        {dags.loading && dags.data && <span className="spinner" aria-label={t('list.refreshing')} />}
      </div>

      {dags.error && !dags.data ? (
        <ErrorBox error={dags.error} onRetry={dags.reload} />
      ) : !dags.data ? (
        <Loading label={t('list.loading')} />
      ) : rows.length === 0 ? (
        <Empty>
          {search
            ? t('list.empty.search', { search })
            : filtered
              ? t('list.empty.filtered')
              : canCreate
                ? t('list.empty.canCreate', { command: APPLY_COMMAND })
                : t('list.empty.cannotCreate', { command: APPLY_COMMAND })}
        </Empty>
      ) : (
        <>
          {dags.error ? <ErrorBox error={dags.error} onRetry={dags.reload} title={t('common:states.couldNotRefresh')} /> : null}
          <div className="table-scroll">
            <table className="table" data-testid="dag-table">
              <thead>
                <tr>
                  <th className="col-toggle" title={t('list.columns.onlineTitle')}>
                    {t('list.columns.online')}
                  </th>
                  <th>{t('list.columns.dag')}</th>
                  <th>{t('list.columns.owner')}</th>
                  <th>{t('list.columns.project')}</th>
                  <th>{t('list.columns.schedules')}</th>
                  <th>{t('list.columns.recentRuns')}</th>
                  <th className="col-actions" />
                </tr>
              </thead>
              <tbody>
                {rows.map((dag) => (
                  <tr key={dag.id} data-testid="dag-row" data-dag-name={dag.name} className={dag.online ? '' : 'row-offline'}>
                    <td className="col-toggle">
                      <OnlineToggle
                        dagId={dag.id}
                        online={dag.online}
                        onChanged={({ online }) =>
                          dags.setData((data) => ({
                            ...data,
                            items: data.items.map((d) => (d.id === dag.id ? { ...d, online } : d)),
                          }))
                        }
                      />
                    </td>
                    <td className="col-name">
                      <Link to={`/dags/${dag.id}`} className="dag-link" translate="no">
                        {dag.name}
                      </Link>
                      {dag.sourceFile && (
                        <span className="tag tag-file" title={t('list.managedBy', { file: dag.sourceFile })}>
                          {t('list.fileTag')}
                        </span>
                      )}
                      {dag.description && (
                        <div className="muted small ellipsis" translate="no">
                          {dag.description}
                        </div>
                      )}
                    </td>
                    <td translate="no">{dag.owner ?? <span className="muted">—</span>}</td>
                    <td translate="no">{projectName(dag.projectId)}</td>
                    <td className="col-sched">
                      {(dag.schedules ?? []).length === 0 ? (
                        <span className="muted">{t('list.manualOnly')}</span>
                      ) : (
                        (dag.schedules ?? []).map((s) => <ScheduleLine key={s.scheduleId} schedule={s} now={now} />)
                      )}
                    </td>
                    <td>
                      <RunStrip runs={dag.recentRuns ?? []} />
                    </td>
                    <td className="col-actions">
                      {canTrigger && (
                        <Link
                          to={`/dags/${dag.id}/trigger`}
                          className="btn btn-sm"
                          title={t('list.triggerTitle')}
                          data-testid="trigger-button"
                        >
                          {t('list.trigger')}
                        </Link>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager page={page} pageSize={PAGE_SIZE} total={dags.data.total} onPage={(p) => set({ page: String(p) })} />
          {filtered && <div className="muted small">{t('list.filtersNote')}</div>}
        </>
      )}
    </div>
  );
}
