import { describe, expect, it } from 'vitest';
import type { GanttAttempt } from '../api/types';
import { ganttLayout, tickCount, ticks } from './gantt';

const at = (over: Partial<GanttAttempt>): GanttAttempt => ({
  taskInstanceId: 1, taskName: 'a', attempt: 0, status: 'SUCCESS', workerId: 'r1',
  startTime: '2026-01-01T00:00:00Z', endTime: '2026-01-01T00:00:10Z', ...over,
});

describe('gantt layout', () => {
  it('puts retries of a task on its row and open attempts up to now', () => {
    const now = Date.parse('2026-01-01T00:01:00Z');
    const g = ganttLayout(
      [
        at({}),
        at({ attempt: 1, status: 'RUNNING', startTime: '2026-01-01T00:00:20Z', endTime: null }),
        at({ taskInstanceId: 2, taskName: 'b', startTime: '2026-01-01T00:00:05Z', endTime: '2026-01-01T00:00:07Z' }),
      ],
      '2026-01-01T00:00:00Z',
      now,
    );
    expect(g.rows.map((r) => r.taskName)).toEqual(['a', 'b']);
    expect(g.rows[0]!.bars).toHaveLength(2);
    expect(g.rows[0]!.bars[1]!.end).toBe(now);
    expect(g.rows[0]!.bars[1]!.open).toBe(true);
    expect(g.max).toBe(now);
  });

  it('ticks on round steps', () => {
    expect(ticks(0, 60_000)).toEqual([0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
  });

  it('labels a narrow axis more sparsely', () => {
    expect(tickCount(1000)).toBe(8);
    expect(tickCount(240)).toBe(3);
    expect(tickCount(60)).toBe(2);
    const wide = ganttLayout([at({ endTime: '2026-01-01T00:01:00Z' })], null, 0, tickCount(1000));
    const narrow = ganttLayout([at({ endTime: '2026-01-01T00:01:00Z' })], null, 0, tickCount(240));
    expect(wide.ticks).toHaveLength(7);
    expect(narrow.ticks.length).toBeLessThanOrEqual(3);
    expect(narrow.ticks.length).toBeGreaterThanOrEqual(2);
  });
});
