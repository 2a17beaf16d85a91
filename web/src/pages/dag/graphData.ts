// What a DAG graph is drawn from: the canvas's tasks and edges, or the
// graph API's tasks, stubs and edges of every kind; plus the tasks of a run
// that the current definition lacks (a run of an older version).

import type { Canvas, Graph, RunDetail, TaskEvent, TaskInstanceDto } from '../../api/types';
import type { GraphStub, GraphTask, TaskState } from '../../components/DagGraph';

type Positioned = { positionX?: number | null; positionY?: number | null };

/** A saved canvas position, if both coordinates are there. */
function savedPoint(t: Positioned): GraphTask['saved'] {
  return t.positionX !== null && t.positionX !== undefined && t.positionY !== null && t.positionY !== undefined
    ? { x: t.positionX, y: t.positionY }
    : null;
}

/** `tasks` with a task for each of the run's task instances they lack. */
function withRunTasks(tasks: GraphTask[], run?: RunDetail | null): GraphTask[] {
  if (!run) return tasks;
  const out = [...tasks];
  const names = new Set(tasks.map((t) => t.name));
  for (const ti of run.taskInstances) {
    if (!names.has(ti.taskName)) {
      names.add(ti.taskName);
      out.push({ name: ti.taskName, type: null, saved: null });
    }
  }
  return out;
}

export function graphTasks(canvas: Canvas, run?: RunDetail | null): GraphTask[] {
  return withRunTasks(
    canvas.tasks.map((t) => ({ name: t.name, type: t.type ?? 'SHELL', saved: savedPoint(t) })),
    run,
  );
}

/**
 * The graph API's answer as the drawing takes it: its tasks (and the run's
 * tasks it lacks), its stubs, each OTHER_RUN stub with the offset its edge
 * waits by (null for the previous run), and its edges.
 */
export function graphParts(graph: Graph, run?: RunDetail | null) {
  const tasks: GraphTask[] = [];
  const stubs: GraphStub[] = [];
  for (const n of graph.nodes) {
    if (n.kind === 'TASK') {
      tasks.push({ name: n.name, type: n.taskType ?? null, saved: savedPoint(n) });
      continue;
    }
    const out = graph.edges.find((e) => e.source === n.id);
    stubs.push({
      id: n.id,
      kind: n.kind,
      name: n.name,
      dag: n.dag ?? null,
      dagId: n.dagId ?? null,
      offsetDay: n.kind === 'OTHER_RUN' && out?.kind === 'CROSS_RUN' ? out.offsetDay : null,
    });
  }
  return { tasks: withRunTasks(tasks, run), stubs, edges: graph.edges };
}

/**
 * The state of each task in a run, by task name: its instance's, or for a
 * mapped task the map's, with how many items it has and its first item.
 */
export function runStates(run: Pick<RunDetail, 'taskInstances' | 'mappedTasks'>): Map<string, TaskState> {
  const out = new Map<string, TaskState>();
  const firstItem = new Map<string, number>();
  for (const ti of run.taskInstances) {
    if (ti.mapIndex !== null && ti.mapIndex !== undefined) {
      if (!firstItem.has(ti.taskName)) firstItem.set(ti.taskName, ti.id);
      continue;
    }
    out.set(ti.taskName, { status: ti.status, taskInstanceId: ti.id, attempts: ti.attempts, flowSkipped: ti.flowSkipped === true });
  }
  for (const m of run.mappedTasks ?? []) {
    out.set(m.taskName, {
      status: m.status,
      taskInstanceId: firstItem.get(m.taskName) ?? 0,
      flowSkipped: false,
      items: m.items,
    });
  }
  return out;
}

/** A run's task instances with a stream event applied. */
export function patchInstances(run: RunDetail, event: TaskEvent): RunDetail {
  if (event.runId !== run.id) return run;
  if (event.mapped === true) {
    // A map's own state: its items are the run's instances.
    const mappedTasks = (run.mappedTasks ?? []).map((m) =>
      m.taskName === event.taskName ? { ...m, status: event.status, endTime: event.endTime } : m,
    );
    return { ...run, mappedTasks };
  }
  const item = event.mapIndex !== null && event.mapIndex !== undefined;
  const at = run.taskInstances.findIndex(
    (ti) =>
      ti.id === event.id ||
      (!item && (ti.mapIndex === null || ti.mapIndex === undefined) && ti.taskName === event.taskName),
  );
  if (at < 0) {
    const added: TaskInstanceDto = {
      id: event.id,
      dagInstanceId: event.runId,
      dagId: event.dagId,
      taskId: event.taskId,
      taskName: event.taskName,
      bizDate: run.bizDate,
      triggerType: run.triggerType,
      status: event.status,
      attempts: event.attempts,
      retryCount: 0,
      workerId: null,
      queue: '',
      priority: 0,
      retryAt: null,
      errorMessage: null,
      queuedTime: null,
      startTime: event.startTime,
      endTime: event.endTime,
      flowSkipped: event.flowSkipped === true,
      mapIndex: event.mapIndex ?? null,
    };
    return { ...run, taskInstances: [...run.taskInstances, added] };
  }
  const old = run.taskInstances[at]!;
  const next = [...run.taskInstances];
  next[at] = {
    ...old,
    id: event.id,
    status: event.status,
    attempts: event.attempts,
    startTime: event.startTime,
    endTime: event.endTime,
    flowSkipped: event.flowSkipped === true,
  };
  return { ...run, taskInstances: next };
}
