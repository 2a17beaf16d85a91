import { describe, expect, it } from 'vitest';
import type { Graph, GraphNode, RunDetail, TaskEvent } from '../../api/types';
import { graphParts, patchInstances, runStates } from './graphData';

/** A node as the API sends it: its name is its id's last part. */
function node(id: string, kind: GraphNode['kind'], fields: Partial<GraphNode> = {}): GraphNode {
  const name = id.split('/').pop()!;
  return { id, kind, name, taskType: null, positionX: null, positionY: null, dag: null, dagId: null, ...fields };
}

const graph: Graph = {
  dagId: 7,
  version: 3,
  nodes: [
    node('load', 'TASK', { taskType: 'SHELL', positionX: 10, positionY: 20 }),
    node('report', 'TASK', { taskType: 'SQL' }),
    node('run/-1/report', 'OTHER_RUN'),
    node('previous/load', 'OTHER_RUN'),
    node('dag/orders/land', 'DAG_TASK', { dag: 'orders', dagId: 4 }),
    node('after/gone', 'DAG', { dag: 'gone' }),
    node('dataset/dw.sales', 'DATASET'),
  ],
  edges: [
    { source: 'load', target: 'report', kind: 'STRONG', weak: false, offsetDay: 0 },
    { source: 'run/-1/report', target: 'report', kind: 'CROSS_RUN', weak: false, offsetDay: -1 },
    { source: 'previous/load', target: 'load', kind: 'PREVIOUS_RUN', weak: true, offsetDay: 0 },
    { source: 'dag/orders/land', target: 'load', kind: 'CROSS_DAG', weak: false, offsetDay: 0 },
    { source: 'after/gone', target: 'load', kind: 'AFTER', weak: false, offsetDay: 0 },
    { source: 'report', target: 'dataset/dw.sales', kind: 'WRITES', weak: false, offsetDay: 0 },
  ],
};

const run = {
  id: 11,
  bizDate: '2024-01-14',
  triggerType: 'MANUAL',
  taskInstances: [
    { id: 101, taskName: 'load', status: 'SUCCESS', attempts: 1 },
    { id: 102, taskName: 'old_task', status: 'FAILED', attempts: 2 },
  ],
} as unknown as RunDetail;

describe('what the DAG graph draws', () => {
  it('splits tasks from stubs, keeping saved positions and the task types', () => {
    const { tasks, stubs, edges } = graphParts(graph);
    expect(tasks).toEqual([
      { name: 'load', type: 'SHELL', saved: { x: 10, y: 20 } },
      { name: 'report', type: 'SQL', saved: null },
    ]);
    expect(stubs.map((s) => s.id)).toEqual([
      'run/-1/report',
      'previous/load',
      'dag/orders/land',
      'after/gone',
      'dataset/dw.sales',
    ]);
    expect(edges).toBe(graph.edges);
  });

  it('gives an other-run stub the day offset it waits by, none for the previous run', () => {
    const { stubs } = graphParts(graph);
    const byId = new Map(stubs.map((s) => [s.id, s]));
    expect(byId.get('run/-1/report')!.offsetDay).toBe(-1);
    expect(byId.get('previous/load')!.offsetDay).toBeNull();
    expect(byId.get('dag/orders/land')).toMatchObject({ kind: 'DAG_TASK', dag: 'orders', dagId: 4 });
    expect(byId.get('after/gone')).toMatchObject({ kind: 'DAG', dagId: null });
  });

  it('adds the tasks of a run of an older version that the graph lacks', () => {
    const { tasks } = graphParts(graph, run);
    expect(tasks.map((t) => t.name)).toEqual(['load', 'report', 'old_task']);
    expect(tasks[2]).toEqual({ name: 'old_task', type: null, saved: null });
  });

  it('colours by the run: each task its instance', () => {
    const states = runStates(run);
    expect(states.get('load')).toEqual({ status: 'SUCCESS', taskInstanceId: 101, attempts: 1, flowSkipped: false });
    const event = { id: 103, runId: 11, dagId: 7, taskId: 2, taskName: 'report', status: 'RUNNING', attempts: 1 } as TaskEvent;
    const patched = patchInstances(run, event);
    expect(runStates(patched).get('report')).toMatchObject({ status: 'RUNNING', taskInstanceId: 103 });
  });

  it('tells a branch not taken from a disabled task', () => {
    const skipped = (flowSkipped: boolean) => ({ ...run.taskInstances[0]!, status: 'SKIPPED' as const, flowSkipped });
    expect(runStates({ taskInstances: [skipped(true)] }).get('load')?.flowSkipped).toBe(true);
    expect(runStates({ taskInstances: [skipped(false)] }).get('load')?.flowSkipped).toBe(false);
    const live = { id: 101, runId: 11, dagId: 7, taskId: 1, taskName: 'load', status: 'SKIPPED', attempts: 0, flowSkipped: true } as TaskEvent;
    expect(runStates(patchInstances(run, live)).get('load')?.flowSkipped).toBe(true);
  });

  it('draws a mapped task as its map, and patches each item apart', () => {
    const mapped = {
      ...run,
      taskInstances: [
        { id: 101, taskName: 'load', status: 'SUCCESS', attempts: 1 },
        { id: 201, taskName: 'each', status: 'SUCCESS', attempts: 1, mapIndex: 0, mapItem: 'a' },
        { id: 202, taskName: 'each', status: 'RUNNING', attempts: 1, mapIndex: 1, mapItem: 'b' },
      ],
      mappedTasks: [{ taskId: 3, taskName: 'each', status: 'RUNNING', items: 2, ended: 1, failed: 0 }],
    } as unknown as RunDetail;
    expect(runStates(mapped).get('each')).toEqual({ status: 'RUNNING', taskInstanceId: 201, flowSkipped: false, items: 2 });
    const second = { id: 202, runId: 11, dagId: 7, taskId: 3, taskName: 'each', status: 'SUCCESS', attempts: 1, mapIndex: 1 } as TaskEvent;
    const patched = patchInstances(mapped, second);
    expect(patched.taskInstances.map((ti) => [ti.id, ti.status])).toEqual([
      [101, 'SUCCESS'],
      [201, 'SUCCESS'],
      [202, 'SUCCESS'],
    ]);
    const ended = { id: 150, runId: 11, dagId: 7, taskId: 3, taskName: 'each', status: 'SUCCESS', attempts: 0, mapped: true } as TaskEvent;
    expect(runStates(patchInstances(patched, ended)).get('each')?.status).toBe('SUCCESS');
  });
});
