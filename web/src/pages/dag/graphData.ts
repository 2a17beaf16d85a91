// What a DAG graph is drawn from: the canvas's tasks and edges, plus the
// tasks of a run that the current canvas lacks (a run of an older version).

import type { Canvas, RunDetail, TaskEvent, TaskInstanceDto } from '../../api/types';
import type { GraphTask, TaskState } from '../../components/DagGraph';

export function graphTasks(canvas: Canvas, run?: RunDetail | null): GraphTask[] {
  const tasks: GraphTask[] = canvas.tasks.map((t) => ({
    name: t.name,
    type: t.type ?? 'SHELL',
    saved:
      t.positionX !== null && t.positionX !== undefined && t.positionY !== null && t.positionY !== undefined
        ? { x: t.positionX, y: t.positionY }
        : null,
  }));
  if (run) {
    const names = new Set(tasks.map((t) => t.name));
    for (const ti of run.taskInstances) {
      if (!names.has(ti.taskName)) {
        names.add(ti.taskName);
        tasks.push({ name: ti.taskName, type: null, saved: null });
      }
    }
  }
  return tasks;
}

/** The state of each task in a run, by task name. */
export function runStates(instances: TaskInstanceDto[]): Map<string, TaskState> {
  const out = new Map<string, TaskState>();
  for (const ti of instances) {
    out.set(ti.taskName, { status: ti.status, taskInstanceId: ti.id, attempts: ti.attempts });
  }
  return out;
}

/** A run's task instances with a stream event applied. */
export function patchInstances(run: RunDetail, event: TaskEvent): RunDetail {
  if (event.runId !== run.id) return run;
  const at = run.taskInstances.findIndex((ti) => ti.id === event.id || ti.taskName === event.taskName);
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
  };
  return { ...run, taskInstances: next };
}
