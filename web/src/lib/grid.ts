// The grid's data: rows are tasks, columns are runs by business date
// (earliest at the left, latest at the right, as Airflow draws it; runs of
// one date in the order they were made), one cell per task and run.
// Built from `GET /dags/{id}/grid` answers and patched by stream events;
// every function returns a new model (or the same one when nothing changed).

import type {
  GridCellDto,
  GridDto,
  GridMapDto,
  GridRunDto,
  GridTaskDto,
  RunEvent,
  RunStatus,
  TaskEvent,
  TaskStatus,
} from '../api/types';

export interface GridCell {
  taskInstanceId: number;
  status: TaskStatus;
  attempts: number;
  /**
   * A mapped task whose items were made: the cell is the map's state and
   * opens the run's list of its items. The counts are as the grid answer
   * gave them; null where a later event changed the map.
   */
  map?: { items: number | null; failed: number | null };
}

export interface GridRun {
  id: number;
  runKey: string;
  bizDate: string;
  status: RunStatus;
  triggerType: string;
  dagVersion: number;
  startTime: string;
  endTime: string | null;
  /** `cells[i]` is the instance of `tasks[i]` in this run, or null. */
  cells: Array<GridCell | null>;
}

export interface GridModel {
  dagId: number;
  tasks: GridTaskDto[];
  /** Earliest business date first: the latest run is the last column. */
  runs: GridRun[];
  /** Whether runs earlier than the first exist. */
  hasMore: boolean;
}

/** The grid's column order: business date, then id (creation). */
export function compareRuns(a: Pick<GridRun, 'bizDate' | 'id'>, b: Pick<GridRun, 'bizDate' | 'id'>): number {
  if (a.bizDate !== b.bizDate) return a.bizDate < b.bizDate ? -1 : 1;
  return a.id - b.id;
}

function cellOf(dto: GridCellDto | undefined, map: GridMapDto | undefined): GridCell | null {
  if (!dto) return null;
  const [taskInstanceId, status, attempts] = dto;
  return map ? { taskInstanceId, status, attempts, map: { items: map.items, failed: map.failed } } : { taskInstanceId, status, attempts };
}

/** A run's cells laid out for `tasks`, from cells (and maps) laid out for `from`. */
function align(
  cells: GridCellDto[],
  maps: GridMapDto[],
  from: GridTaskDto[],
  tasks: GridTaskDto[],
): Array<GridCell | null> {
  const mapAt = new Map(maps.map((m) => [m.row, m]));
  const cell = (i: number) => cellOf(cells[i], mapAt.get(i));
  if (from === tasks) return tasks.map((_, i) => cell(i));
  const at = new Map(from.map((t, i) => [t.name, i]));
  return tasks.map((t) => {
    const i = at.get(t.name);
    return i === undefined ? null : cell(i);
  });
}

function runOf(dto: GridRunDto, from: GridTaskDto[], tasks: GridTaskDto[]): GridRun {
  return {
    id: dto.id,
    runKey: dto.runKey,
    bizDate: dto.bizDate,
    status: dto.status,
    triggerType: dto.triggerType,
    dagVersion: dto.dagVersion,
    startTime: dto.startTime,
    endTime: dto.endTime,
    cells: align(dto.cells, dto.maps, from, tasks),
  };
}

/** The model of a grid answer (whose runs are latest first). */
export function fromGrid(dto: GridDto): GridModel {
  const tasks = dto.tasks;
  return {
    dagId: dto.dagId,
    tasks,
    runs: [...dto.runs].reverse().map((r) => runOf(r, tasks, tasks)),
    hasMore: dto.hasMore,
  };
}

/** The tasks of `a` followed by those of `b` it lacks (by name). */
function unionTasks(a: GridTaskDto[], b: GridTaskDto[]): GridTaskDto[] {
  const names = new Set(a.map((t) => t.name));
  const extra = b.filter((t) => !names.has(t.name));
  return extra.length ? [...a, ...extra] : a;
}

/** Widens every run's cells to `tasks` (which extends the runs' own). */
function widen(runs: GridRun[], tasks: GridTaskDto[]): GridRun[] {
  return runs.map((r) =>
    r.cells.length === tasks.length
      ? r
      : { ...r, cells: [...r.cells, ...new Array<null>(tasks.length - r.cells.length).fill(null)] },
  );
}

/** `model` with the earlier runs of `dto` (a `before=` page) at its left. */
export function mergeOlder(model: GridModel, dto: GridDto): GridModel {
  const tasks = unionTasks(model.tasks, dto.tasks);
  const known = new Set(model.runs.map((r) => r.id));
  const older = [...dto.runs]
    .reverse()
    .filter((r) => !known.has(r.id))
    .map((r) => runOf(r, dto.tasks, tasks));
  return {
    ...model,
    tasks,
    runs: [...older, ...widen(model.runs, tasks)],
    hasMore: dto.hasMore,
  };
}

/** The id to pass as `before` for the next earlier page. */
export function oldestRunId(model: GridModel): number | undefined {
  return model.runs[0]?.id;
}

function sameCell(a: GridCell, b: GridCell): boolean {
  return (
    a.taskInstanceId === b.taskInstanceId &&
    a.status === b.status &&
    a.attempts === b.attempts &&
    a.map?.items === b.map?.items &&
    a.map?.failed === b.map?.failed
  );
}

/** `model` with a task instance's change from the stream. */
export function applyTaskEvent(model: GridModel, event: TaskEvent): GridModel {
  // An item of a mapped task: its cell is the map's.
  if (event.dagId !== model.dagId || event.mapIndex != null) return model;
  const r = model.runs.findIndex((run) => run.id === event.runId);
  if (r < 0) return model;
  let tasks = model.tasks;
  let runs = model.runs;
  let t = tasks.findIndex((task) => task.name === event.taskName);
  if (t < 0) {
    // A task the grid has no row for (the DAG changed): give it one.
    tasks = [...tasks, { id: event.taskId, name: event.taskName, taskType: null, upstream: [] }];
    runs = widen(runs, tasks);
    t = tasks.length - 1;
  }
  const run = runs[r]!;
  const old = run.cells[t];
  const cell: GridCell = { taskInstanceId: event.mapped && old?.map ? old.taskInstanceId : event.id, status: event.status, attempts: event.attempts };
  // A map that reran only its failed items keeps its list; one cleared is
  // unmapped until it reads its list again. How many failed is known again
  // only from the next grid answer.
  if (event.mapped) {
    const failed = old?.map && old.status === event.status ? old.map.failed : null;
    cell.map = { items: old?.map?.items ?? null, failed };
  }
  if (old && sameCell(old, cell)) return model;
  const cells = [...run.cells];
  cells[t] = cell;
  const next = [...runs];
  next[r] = { ...run, cells };
  return { ...model, tasks, runs: next };
}

/**
 * `model` with a run's change from the stream: a known run takes its new
 * status and times; a new run of this DAG becomes a column at its
 * business date.
 */
export function applyRunEvent(model: GridModel, event: RunEvent): GridModel {
  if (event.dagId !== model.dagId) return model;
  const r = model.runs.findIndex((run) => run.id === event.id);
  if (r >= 0) {
    const run = model.runs[r]!;
    if (
      run.status === event.status &&
      run.endTime === event.endTime &&
      run.startTime === event.startTime
    ) {
      return model;
    }
    const runs = [...model.runs];
    runs[r] = {
      ...run,
      status: event.status,
      startTime: event.startTime,
      endTime: event.endTime,
      bizDate: event.bizDate,
    };
    return { ...model, runs };
  }
  const earliest = model.runs[0];
  // A run before the first column belongs to a page not loaded.
  if (earliest && compareRuns(event, earliest) < 0 && model.hasMore) return model;
  const fresh: GridRun = {
    id: event.id,
    runKey: event.runKey,
    bizDate: event.bizDate,
    status: event.status,
    triggerType: event.triggerType,
    dagVersion: event.dagVersion,
    startTime: event.startTime,
    endTime: event.endTime,
    cells: model.tasks.map(() => null),
  };
  const runs = [...model.runs, fresh].sort(compareRuns);
  return { ...model, runs };
}

/** What the grid's rows are narrowed to: a part of a task's name, a state. */
export interface GridFilter {
  text: string;
  status: TaskStatus | '';
}

/**
 * `model` with only the tasks whose name holds `filter.text` (any case)
 * and, when a state is chosen, that have a cell in that state; the same
 * model when nothing is filtered.
 */
export function filterGrid(model: GridModel, filter: GridFilter): GridModel {
  const text = filter.text.trim().toLowerCase();
  if (!text && !filter.status) return model;
  const keep = model.tasks
    .map((task, i) => ({ task, i }))
    .filter(
      ({ task, i }) =>
        (!text || task.name.toLowerCase().includes(text)) &&
        (!filter.status || model.runs.some((run) => run.cells[i]?.status === filter.status)),
    );
  return {
    ...model,
    tasks: keep.map(({ task }) => task),
    runs: model.runs.map((run) => ({ ...run, cells: keep.map(({ i }) => run.cells[i] ?? null) })),
  };
}

/** The longest run duration in ms (for the header bars' scale). */
export function longestRunMs(model: GridModel, now: number): number {
  let longest = 0;
  for (const run of model.runs) {
    const start = Date.parse(run.startTime);
    const end = run.endTime ? Date.parse(run.endTime) : now;
    if (!Number.isNaN(start) && !Number.isNaN(end)) longest = Math.max(longest, end - start);
  }
  return longest;
}
