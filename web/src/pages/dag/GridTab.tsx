// Airflow's grid: a row per task, a column per run by business date (the
// latest at the right, each new date labelled), a bar per run whose height
// is its duration, a square per cell. Rows and columns are windowed, so a
// thousand runs of fifty tasks draw only what is on screen; rows can be
// narrowed to a name and a state.

import { memo, useLayoutEffect, useMemo, useRef, useState, type MouseEvent } from 'react';
import { useTranslation } from 'react-i18next';
import { Link, useNavigate } from 'react-router';
import { useVirtualizer } from '@tanstack/react-virtual';
import { errorMessage } from '../../api/client';
import { getGrid } from '../../api/endpoints';
import { StatusBadge } from '../../components/Status';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { durationMs, formatDuration } from '../../lib/format';
import {
  applyRunEvent,
  applyTaskEvent,
  filterGrid,
  fromGrid,
  longestRunMs,
  mergeOlder,
  oldestRunId,
  type GridFilter,
  type GridModel,
  type GridRun,
} from '../../lib/grid';
import { useAsync, useNow } from '../../lib/hooks';
import { itemsAnchor, triggerLabel } from '../../lib/runs';
import { isTerminalRun, normalizeStatus, STATUS_STYLES, statusClass, statusLabel, statusStyle } from '../../lib/status';
import { useStream } from '../../live/stream';
import { Time } from '../../components/Time';

const COL_W = 18;
const CELL = 14;
const ROW_H = 22;
const NAME_W = 220;
const HEADER_H = 88;
const BAR_MAX = 56;
/** The strip under the run bars that holds the business dates. */
const DATE_H = 16;
/** The least room between two date labels. */
const DATE_GAP = 52;
/** The states the rows can be narrowed to, in the legend's order. */
const FILTER_STATES = ['FAILED', 'UPSTREAM_FAILED', 'TIMEOUT', 'KILLED', 'RUNNING', 'QUEUED', 'UP_FOR_RETRY', 'UP_FOR_RESCHEDULE', 'SKIPPED', 'SUCCESS'] as const;

const SIZES = [25, 50, 100] as const;
const ROW_BLOCK = 40;

/** One run's cells for rows `rowFrom`..`rowTo`; redrawn only when they change. */
const GridColumn = memo(function GridColumn({
  run,
  tasks,
  left,
  rowFrom,
  rowTo,
}: {
  run: GridRun;
  tasks: GridModel['tasks'];
  left: number;
  rowFrom: number;
  rowTo: number;
}) {
  const { t } = useTranslation('dag');
  const out = [];
  for (let i = rowFrom; i < rowTo; i++) {
    const task = tasks[i];
    if (!task) break;
    const cell = run.cells[i] ?? null;
    const top = HEADER_H + i * ROW_H + (ROW_H - CELL) / 2;
    if (!cell) {
      out.push(
        <span
          key={i}
          className="cell cell-none"
          style={{ top }}
          data-testid="grid-cell"
          data-task={task.name}
          data-run-id={run.id}
          data-status="NONE"
          title={t('grid.cellNone', { task: task.name, bizDate: run.bizDate })}
        />,
      );
      continue;
    }
    const s = statusStyle(cell.status);
    const what = { task: task.name, bizDate: run.bizDate, status: statusLabel(cell.status), attempts: cell.attempts };
    out.push(
      <a
        key={i}
        href={cell.map ? `/runs/${run.id}#${itemsAnchor(task.name)}` : `/task-instances/${cell.taskInstanceId}`}
        className={`cell ${statusClass(cell.status)}${cell.map ? ' cell-mapped' : ''}`}
        style={{ top, background: s.fill, borderColor: s.border }}
        data-testid="grid-cell"
        data-task={task.name}
        data-run-id={run.id}
        data-status={normalizeStatus(cell.status)}
        data-items={cell.map?.items ?? undefined}
        data-failed={cell.map?.failed ?? undefined}
        title={
          cell.map
            ? cell.map.items === null
              ? t('grid.cellMapped', what)
              : t(cell.map.failed ? 'grid.cellMapFailed' : 'grid.cellMap', { ...what, count: cell.map.items, failed: cell.map.failed })
            : t(cell.attempts > 1 ? 'grid.cellAttempts' : 'grid.cell', what)
        }
      />,
    );
  }
  return (
    <div className="grid-col" style={{ left: left + (COL_W - CELL) / 2 }}>
      {out}
    </div>
  );
});

export function GridTab({
  dagId,
  selectedRun,
  onSelectRun,
}: {
  dagId: number;
  selectedRun: number | null;
  onSelectRun: (id: number | null) => void;
}) {
  const { t } = useTranslation(['dag', 'common']);
  const [size, setSize] = useState<number>(25);
  const grid = useAsync(`grid:${dagId}:${size}`, (signal) => getGrid(dagId, size, undefined, { signal }).then(fromGrid));
  const [older, setOlder] = useState<{ busy: boolean; error: unknown }>({ busy: false, error: null });
  const [filter, setFilter] = useState<GridFilter>({ text: '', status: '' });
  const shown = useMemo(() => (grid.data ? filterGrid(grid.data, filter) : null), [grid.data, filter]);

  useStream({
    onTask: (event) => {
      if (event.dagId === dagId) grid.setData((m) => applyTaskEvent(m, event));
    },
    onRun: (event) => {
      if (event.dagId === dagId) grid.setData((m) => applyRunEvent(m, event));
    },
    onReconnect: () => grid.reload(),
  });

  const loadOlder = async () => {
    const model = grid.data;
    if (!model) return;
    setOlder({ busy: true, error: null });
    try {
      const dto = await getGrid(dagId, size, oldestRunId(model));
      grid.setData((m) => mergeOlder(m, dto));
      setOlder({ busy: false, error: null });
    } catch (e) {
      setOlder({ busy: false, error: e });
    }
  };

  if (!grid.data || !shown) {
    return grid.error ? <ErrorBox error={grid.error} onRetry={grid.reload} /> : <Loading label={t('grid.loading')} />;
  }
  const model = grid.data;
  const selected = model.runs.find((r) => r.id === selectedRun) ?? null;
  const filtered = shown !== model;
  return (
    <div className="grid-layout">
      <div className="grid-main">
        <div className="toolbar">
          <input
            type="search"
            className="input input-sm"
            value={filter.text}
            onChange={(e) => setFilter((f) => ({ ...f, text: e.target.value }))}
            placeholder={t('grid.filterName')}
            aria-label={t('grid.filterName')}
            data-testid="grid-filter-name"
          />
          <select
            className="input input-sm"
            value={filter.status}
            onChange={(e) => setFilter((f) => ({ ...f, status: e.target.value as GridFilter['status'] }))}
            aria-label={t('grid.filterState')}
            data-testid="grid-filter-state"
          >
            <option value="">{t('grid.anyState')}</option>
            {FILTER_STATES.map((st) => (
              <option key={st} value={st}>
                {statusLabel(st)}
              </option>
            ))}
          </select>
          <span className="muted small" data-testid="grid-summary">
            {filtered
              ? t('grid.summaryFiltered', { runs: model.runs.length, shown: shown.tasks.length, tasks: model.tasks.length })
              : t('grid.summary', { runs: model.runs.length, tasks: model.tasks.length })}
          </span>
          <label className="field-inline">
            <span>{t('grid.perPage')}</span>
            <select className="input input-sm" value={size} onChange={(e) => setSize(Number(e.target.value))}>
              {SIZES.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          {model.hasMore && (
            <button type="button" className="btn btn-sm" disabled={older.busy} onClick={loadOlder} data-testid="grid-load-older">
              {older.busy ? t('common:states.loading') : t('grid.loadOlder')}
            </button>
          )}
          {older.error ? <span className="inline-error">{errorMessage(older.error)}</span> : null}
          {grid.error ? <span className="inline-error">{t('grid.refreshFailed', { message: errorMessage(grid.error) })}</span> : null}
        </div>
        {model.tasks.length === 0 ? (
          <Empty>{t('noTasks')}</Empty>
        ) : model.runs.length === 0 ? (
          <Empty>{t('grid.noRuns')}</Empty>
        ) : shown.tasks.length === 0 ? (
          <Empty>{t('grid.noMatch')}</Empty>
        ) : (
          <GridView model={shown} selectedRun={selectedRun} onSelectRun={onSelectRun} />
        )}
      </div>
      <RunPanel run={selected} model={model} onClose={() => onSelectRun(null)} />
    </div>
  );
}

function GridView({
  model,
  selectedRun,
  onSelectRun,
}: {
  model: GridModel;
  selectedRun: number | null;
  onSelectRun: (id: number | null) => void;
}) {
  const { t } = useTranslation('dag');
  const navigate = useNavigate();
  const scroller = useRef<HTMLDivElement>(null);
  const anyRunning = model.runs.some((r) => !isTerminalRun(r.status));
  const now = useNow(5000, anyRunning);
  const longest = useMemo(() => Math.max(1, longestRunMs(model, now)), [model, now]);

  // eslint-disable-next-line react-hooks/incompatible-library -- the virtualizer's functions are read during render on purpose
  const cols = useVirtualizer({
    horizontal: true,
    count: model.runs.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => COL_W,
    paddingStart: NAME_W,
    paddingEnd: 8,
    overscan: 8,
  });
  const rows = useVirtualizer({
    count: model.tasks.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_H,
    paddingStart: HEADER_H,
    paddingEnd: 4,
    overscan: 6,
  });

  // Keep the newest runs in view: at first, and whenever the view was at
  // the right edge when runs were added; older runs added at the left keep
  // the columns shown where they were.
  const view = useRef<{ first: number | null; width: number; left: number; atEnd: boolean }>({
    first: null,
    width: 0,
    left: 0,
    atEnd: true,
  });
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const prev = view.current;
    const first = model.runs[0]?.id ?? null;
    const width = el.scrollWidth;
    if (prev.atEnd) {
      el.scrollLeft = width;
    } else if (prev.first !== null && first !== prev.first) {
      el.scrollLeft = prev.left + (width - prev.width);
    }
    view.current = { first, width, left: el.scrollLeft, atEnd: el.scrollLeft + el.clientWidth >= width - 4 };
  }, [model.runs]);
  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    view.current = {
      ...view.current,
      width: el.scrollWidth,
      left: el.scrollLeft,
      atEnd: el.scrollLeft + el.clientWidth >= el.scrollWidth - 4,
    };
  };

  const onClick = (e: MouseEvent) => {
    const cell = (e.target as HTMLElement).closest<HTMLAnchorElement>('a.cell');
    const to = cell?.getAttribute('href');
    if (to) {
      e.preventDefault();
      navigate(to);
    }
  };

  // A label where the business date changes, where there is room for it.
  const dateLabels = useMemo(() => {
    const labels: number[] = [];
    let lastX = -DATE_GAP;
    model.runs.forEach((run, i) => {
      const x = i * COL_W;
      if (model.runs[i - 1]?.bizDate !== run.bizDate && x - lastX >= DATE_GAP) {
        labels.push(i);
        lastX = x;
      }
    });
    return labels;
  }, [model.runs]);

  const totalW = cols.getTotalSize();
  const totalH = rows.getTotalSize();
  const vCols = cols.getVirtualItems();
  const vRows = rows.getVirtualItems();
  // Rows are drawn in blocks, so columns re-render only when a block
  // boundary is crossed, not on every pixel of vertical scrolling.
  const firstRow = vRows[0]?.index ?? 0;
  const lastRow = vRows[vRows.length - 1]?.index ?? -1;
  const rowFrom = Math.floor(firstRow / ROW_BLOCK) * ROW_BLOCK;
  const rowTo = Math.min(model.tasks.length, (Math.floor(lastRow / ROW_BLOCK) + 1) * ROW_BLOCK);
  const selectedIndex = selectedRun === null ? -1 : model.runs.findIndex((r) => r.id === selectedRun);

  return (
    <div
      className="grid-scroll"
      ref={scroller}
      onScroll={onScroll}
      onClick={onClick}
      style={{ maxHeight: 'calc(100vh - 250px)', height: totalH + 2 }}
      data-testid="grid"
    >
      <div className="grid-inner" style={{ width: totalW, height: totalH }}>
        <div className="grid-header" style={{ width: totalW, height: HEADER_H }}>
          <div className="grid-corner" style={{ width: NAME_W, height: HEADER_H }}>
            <span className="muted small">{t('grid.corner')}</span>
          </div>
          {vCols.map((c) => {
            const run = model.runs[c.index]!;
            const ms = durationMs(run.startTime, run.endTime, now) ?? 0;
            const h = Math.max(4, Math.round((ms / longest) * BAR_MAX));
            const s = statusStyle(run.status);
            return (
              <button
                type="button"
                key={run.id}
                className={`run-col${run.id === selectedRun ? ' selected' : ''}`}
                style={{ left: c.start, width: COL_W, height: HEADER_H - DATE_H }}
                title={t('grid.runTitle', {
                  bizDate: run.bizDate,
                  status: statusLabel(run.status),
                  trigger: triggerLabel(run.triggerType),
                  duration: formatDuration(ms),
                  id: run.id,
                })}
                onClick={() => onSelectRun(run.id === selectedRun ? null : run.id)}
                data-testid="grid-run"
                data-run-id={run.id}
                data-status={normalizeStatus(run.status)}
              >
                <span className={`run-bar ${statusClass(run.status)}`} style={{ height: h, background: s.fill, borderColor: s.border }} />
              </button>
            );
          })}
          {dateLabels
            .filter((i) => i >= (vCols[0]?.index ?? 0) - 4 && i <= (vCols[vCols.length - 1]?.index ?? -1))
            .map((i) => {
              const run = model.runs[i]!;
              return (
                <time
                  key={`${run.bizDate}:${i}`}
                  className="grid-date"
                  dateTime={run.bizDate}
                  title={t('grid.dateTitle', { bizDate: run.bizDate })}
                  style={{ left: NAME_W + i * COL_W, top: HEADER_H - DATE_H, height: DATE_H }}
                  data-testid="grid-date"
                >
                  {run.bizDate.slice(5)}
                </time>
              );
            })}
        </div>
        <div className="grid-names" style={{ width: NAME_W, height: totalH - HEADER_H }}>
          {vRows.map((r) => {
            const task = model.tasks[r.index]!;
            return (
              <div
                key={task.name}
                className="grid-name"
                style={{ top: r.start - HEADER_H, height: ROW_H }}
                title={task.upstream.length ? t('grid.after', { upstream: task.upstream.join(', ') }) : t('grid.noUpstream')}
              >
                <span className="ellipsis" translate="no">
                  {task.name}
                </span>
                {task.taskType && (
                  <span className="type-tag" translate="no">
                    {task.taskType}
                  </span>
                )}
              </div>
            );
          })}
        </div>
        {selectedIndex >= 0 && (
          <div className="grid-stripe" style={{ left: NAME_W + selectedIndex * COL_W, width: COL_W, top: HEADER_H, height: totalH - HEADER_H }} />
        )}
        {vCols.map((c) => (
          <GridColumn
            key={model.runs[c.index]!.id}
            run={model.runs[c.index]!}
            tasks={model.tasks}
            left={c.start}
            rowFrom={rowFrom}
            rowTo={rowTo}
          />
        ))}
      </div>
    </div>
  );
}

function RunPanel({ run, model, onClose }: { run: GridRun | null; model: GridModel; onClose: () => void }) {
  const { t } = useTranslation('dag');
  const now = useNow(5000, !!run && !isTerminalRun(run.status));
  if (!run) {
    return (
      <aside className="side-panel">
        <h3>{t('grid.legend')}</h3>
        <ul className="legend">
          {(['SUCCESS', 'FAILED', 'RUNNING', 'QUEUED', 'UP_FOR_RETRY', 'UP_FOR_RESCHEDULE', 'TIMEOUT', 'KILLED', 'UPSTREAM_FAILED', 'SKIPPED', 'PENDING', 'NONE'] as const).map((st) => (
            <li key={st}>
              <span className={`sq ${statusClass(st)}`} style={{ background: STATUS_STYLES[st].fill, borderColor: STATUS_STYLES[st].border }} />
              {statusLabel(st)}
            </li>
          ))}
        </ul>
        <p className="muted small">{t('grid.legendHint')}</p>
      </aside>
    );
  }
  const counts = new Map<string, number>();
  for (const c of run.cells) {
    if (c) counts.set(c.status, (counts.get(c.status) ?? 0) + 1);
  }
  return (
    <aside className="side-panel" data-testid="grid-run-panel">
      <div className="side-head">
        <h3>{t('grid.runHead', { id: run.id })}</h3>
        <button type="button" className="btn-icon" onClick={onClose} aria-label={t('grid.close')}>
          ×
        </button>
      </div>
      <StatusBadge status={run.status} />
      <dl className="kv">
        <dt>{t('grid.bizDate')}</dt>
        <dd>{run.bizDate}</dd>
        <dt>{t('grid.runKey')}</dt>
        <dd className="mono small break" translate="no">
          {run.runKey}
        </dd>
        <dt>{t('grid.trigger')}</dt>
        <dd>{triggerLabel(run.triggerType)}</dd>
        {run.dagVersion > 0 && (
          <>
            <dt>{t('grid.dagVersion')}</dt>
            <dd>{t('version', { version: run.dagVersion })}</dd>
          </>
        )}
        <dt>{t('grid.started')}</dt>
        <dd><Time iso={run.startTime} /></dd>
        <dt>{t('grid.ended')}</dt>
        <dd><Time iso={run.endTime} /></dd>
        <dt>{t('grid.duration')}</dt>
        <dd>{formatDuration(durationMs(run.startTime, run.endTime, now))}</dd>
      </dl>
      <div className="counts">
        {[...counts.entries()].map(([st, n]) => (
          <span key={st} className="count-chip">
            <span className={`sq ${statusClass(st)}`} style={{ background: statusStyle(st).fill, borderColor: statusStyle(st).border }} />
            {t('grid.statusCount', { n, status: statusLabel(st) })}
          </span>
        ))}
        {counts.size === 0 && <span className="muted small">{t('grid.noInstances', { tasks: model.tasks.length })}</span>}
      </div>
      <Link to={`/runs/${run.id}`} className="btn btn-block" data-testid="open-run">
        {t('grid.openRun')}
      </Link>
    </aside>
  );
}
