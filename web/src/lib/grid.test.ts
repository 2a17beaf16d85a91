import { describe, expect, it } from 'vitest';
import type { GridDto, RunEvent, TaskEvent } from '../api/types';
import { applyRunEvent, applyTaskEvent, filterGrid, fromGrid, mergeOlder, oldestRunId } from './grid';

const tasks = [
  { id: 1, name: 'extract', taskType: 'SHELL', upstream: [] },
  { id: 2, name: 'load', taskType: 'SQL', upstream: ['extract'] },
];

const dto: GridDto = {
  dagId: 7,
  tasks,
  runs: [
    {
      id: 12, runKey: 'manual:b', bizDate: '2026-11-02', status: 'RUNNING', triggerType: 'MANUAL',
      dagVersion: 3, startTime: '2026-11-03T00:00:00Z', endTime: null,
      cells: [[120, 'SUCCESS', 1], null],
      maps: [],
    },
    {
      id: 10, runKey: 'sched:a', bizDate: '2026-11-01', status: 'SUCCESS', triggerType: 'SCHEDULE',
      dagVersion: 3, startTime: '2026-11-02T00:00:00Z', endTime: '2026-11-02T00:05:00Z',
      cells: [[100, 'SUCCESS', 1], [101, 'SUCCESS', 2]],
      maps: [{ row: 1, items: 37, failed: 2 }],
    },
  ],
  hasMore: true,
};

const taskEvent = (over: Partial<TaskEvent>): TaskEvent => ({
  id: 121, runId: 12, dagId: 7, taskId: 2, taskName: 'load', status: 'RUNNING', attempts: 1,
  startTime: '2026-11-03T00:01:00Z', endTime: null, ...over,
});

const runEvent = (over: Partial<RunEvent>): RunEvent => ({
  id: 13, dagId: 7, dagVersion: 3, status: 'RUNNING', bizDate: '2026-11-03', runKey: 'manual:c',
  triggerType: 'MANUAL', startTime: '2026-11-04T00:00:00Z', endTime: null, ...over,
});

describe('grid data', () => {
  it('puts the latest business date at the right with cells aligned to tasks', () => {
    const m = fromGrid(dto);
    expect(m.runs.map((r) => r.id)).toEqual([10, 12]);
    expect(m.runs[0]!.cells.map((c) => c?.taskInstanceId)).toEqual([100, 101]);
    expect(m.runs[1]!.cells[0]).toEqual({ taskInstanceId: 120, status: 'SUCCESS', attempts: 1 });
    expect(m.runs[1]!.cells[1]).toBeNull();
    expect(oldestRunId(m)).toBe(10);
  });

  it('pads short cell lists with nulls', () => {
    const m = fromGrid({ ...dto, runs: [{ ...dto.runs[0]!, cells: [[120, 'SUCCESS', 1]] }] });
    expect(m.runs[0]!.cells).toHaveLength(2);
    expect(m.runs[0]!.cells[1]).toBeNull();
  });

  it('patches a cell from a task event', () => {
    const m = fromGrid(dto);
    const next = applyTaskEvent(m, taskEvent({}));
    expect(next.runs[1]!.cells[1]).toEqual({ taskInstanceId: 121, status: 'RUNNING', attempts: 1 });
    expect(m.runs[1]!.cells[1]).toBeNull(); // unchanged original
    expect(next.runs[0]).toBe(m.runs[0]); // other columns kept
    // The same event again changes nothing.
    expect(applyTaskEvent(next, taskEvent({}))).toBe(next);
  });

  it('folds a mapped task into its map: counts from the answer, items ignored, the map state kept live', () => {
    const m = fromGrid(dto);
    expect(m.runs[0]!.cells[1]).toEqual({ taskInstanceId: 101, status: 'SUCCESS', attempts: 2, map: { items: 37, failed: 2 } });
    expect(m.runs[0]!.cells[0]!.map).toBeUndefined();
    // An item's event never paints the map's cell.
    expect(applyTaskEvent(m, taskEvent({ runId: 10, id: 150, status: 'RUNNING', mapIndex: 3 }))).toBe(m);
    // A rerun of the failed items: the map runs again over the same list,
    // its cell still opening the items; how many failed is not known yet.
    const rerun = applyTaskEvent(m, taskEvent({ runId: 10, id: 99, status: 'RUNNING', attempts: 2, mapped: true }));
    expect(rerun.runs[0]!.cells[1]).toEqual({ taskInstanceId: 101, status: 'RUNNING', attempts: 2, map: { items: 37, failed: null } });
    // A clear: the map is an ordinary pending task until it reads its list again.
    const cleared = applyTaskEvent(rerun, taskEvent({ runId: 10, id: 99, status: 'PENDING', attempts: 0 }));
    expect(cleared.runs[0]!.cells[1]).toEqual({ taskInstanceId: 99, status: 'PENDING', attempts: 0 });
    const expanded = applyTaskEvent(cleared, taskEvent({ runId: 10, id: 99, status: 'RUNNING', attempts: 0, mapped: true }));
    expect(expanded.runs[0]!.cells[1]!.map).toEqual({ items: null, failed: null });
    expect(applyTaskEvent(expanded, taskEvent({ runId: 10, id: 99, status: 'RUNNING', attempts: 0, mapped: true }))).toBe(expanded);
  });

  it('ignores events of other DAGs and unknown runs', () => {
    const m = fromGrid(dto);
    expect(applyTaskEvent(m, taskEvent({ dagId: 8 }))).toBe(m);
    expect(applyTaskEvent(m, taskEvent({ runId: 99 }))).toBe(m);
  });

  it('adds a row for a task the grid did not know', () => {
    const m = applyTaskEvent(fromGrid(dto), taskEvent({ taskName: 'report', taskId: 3, id: 122 }));
    expect(m.tasks.map((t) => t.name)).toEqual(['extract', 'load', 'report']);
    for (const run of m.runs) expect(run.cells).toHaveLength(3);
    expect(m.runs[1]!.cells[2]?.taskInstanceId).toBe(122);
  });

  it('updates a run and adds a new run as the newest column', () => {
    let m = fromGrid(dto);
    m = applyRunEvent(m, runEvent({ id: 12, status: 'SUCCESS', endTime: '2026-11-03T00:09:00Z', runKey: 'manual:b', bizDate: '2026-11-02', startTime: '2026-11-03T00:00:00Z' }));
    expect(m.runs[1]!.status).toBe('SUCCESS');
    m = applyRunEvent(m, runEvent({}));
    expect(m.runs.map((r) => r.id)).toEqual([10, 12, 13]);
    expect(m.runs[2]!.cells).toEqual([null, null]);
    // Its tasks then fill in.
    m = applyTaskEvent(m, taskEvent({ runId: 13, id: 130, taskName: 'extract', taskId: 1 }));
    expect(m.runs[2]!.cells[0]?.taskInstanceId).toBe(130);
  });

  it('puts a new run of an earlier business date at its date, not at the right', () => {
    let m = fromGrid(dto);
    m = applyRunEvent(m, runEvent({ id: 14, bizDate: '2026-11-01', runKey: 'backfill:x' }));
    expect(m.runs.map((r) => r.id)).toEqual([10, 14, 12]);
    // Before the first column while earlier pages exist: not this page's.
    m = applyRunEvent(m, runEvent({ id: 15, bizDate: '2026-10-01', runKey: 'backfill:y' }));
    expect(m.runs.map((r) => r.id)).toEqual([10, 14, 12]);
  });

  it('narrows the rows to a part of a name and to a state, keeping cells aligned', () => {
    const m = fromGrid(dto);
    expect(filterGrid(m, { text: '', status: '' })).toBe(m);
    const byName = filterGrid(m, { text: 'LOA', status: '' });
    expect(byName.tasks.map((t) => t.name)).toEqual(['load']);
    expect(byName.runs[0]!.cells.map((c) => c?.taskInstanceId)).toEqual([101]);
    expect(byName.runs[1]!.cells).toEqual([null]);
    const succeededTwice = filterGrid(m, { text: '', status: 'SUCCESS' });
    expect(succeededTwice.tasks.map((t) => t.name)).toEqual(['extract', 'load']);
    expect(filterGrid(m, { text: '', status: 'FAILED' }).tasks).toEqual([]);
    expect(filterGrid(m, { text: 'ext', status: 'SUCCESS' }).runs[1]!.cells.map((c) => c?.taskInstanceId)).toEqual([120]);
  });

  it('merges older runs at the left, realigned to the tasks', () => {
    const m = fromGrid(dto);
    const older = mergeOlder(m, {
      dagId: 7,
      tasks: [tasks[1]!, tasks[0]!], // another order
      runs: [
        { ...dto.runs[1]!, id: 10 }, // overlaps: dropped
        { ...dto.runs[1]!, id: 8, cells: [[81, 'FAILED', 3], [80, 'SUCCESS', 1]] },
      ],
      hasMore: false,
    });
    expect(older.runs.map((r) => r.id)).toEqual([8, 10, 12]);
    expect(older.runs[0]!.cells.map((c) => c?.taskInstanceId)).toEqual([80, 81]);
    // Its map row 1 (extract, in the page's order) moves with its cell.
    expect(older.runs[0]!.cells.map((c) => c?.map?.items)).toEqual([37, undefined]);
    expect(older.hasMore).toBe(false);
  });
});
