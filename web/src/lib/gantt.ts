// The Gantt's geometry: rows per task, a bar per attempt, a time axis.

import type { GanttAttempt } from '../api/types';

export interface GanttRow {
  taskName: string;
  taskInstanceId: number;
  bars: Array<GanttAttempt & { start: number; end: number; open: boolean }>;
}

export interface GanttLayout {
  rows: GanttRow[];
  min: number;
  max: number;
  ticks: number[];
}

const STEPS = [
  1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3,
  3 * 3600e3, 6 * 3600e3, 12 * 3600e3, 86400e3, 2 * 86400e3, 7 * 86400e3,
];

/** Tick times between `min` and `max`, about `target` of them, on round steps. */
export function ticks(min: number, max: number, target = 8): number[] {
  const span = Math.max(1, max - min);
  const step = STEPS.find((s) => span / s <= target) ?? STEPS[STEPS.length - 1]!;
  const out: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max; t += step) out.push(t);
  return out;
}

/** The room one axis label (a clock, `02:00:00`) needs, in pixels. */
const TICK_ROOM = 80;

/** How many axis labels fit a track `width` pixels wide: 2 to 8. */
export function tickCount(width: number): number {
  return Math.max(2, Math.min(8, Math.floor(width / TICK_ROOM)));
}

/**
 * Rows in the order tasks first started; each attempt a bar (an open one
 * to `now`); about `tickTarget` axis labels.
 */
export function ganttLayout(attempts: GanttAttempt[], runStart: string | null, now: number, tickTarget = 8): GanttLayout {
  const rows = new Map<string, GanttRow>();
  let min = runStart ? Date.parse(runStart) : Infinity;
  let max = -Infinity;
  const sorted = [...attempts].sort(
    (a, b) => Date.parse(a.startTime) - Date.parse(b.startTime) || a.attempt - b.attempt,
  );
  for (const a of sorted) {
    const start = Date.parse(a.startTime);
    if (Number.isNaN(start)) continue;
    const open = !a.endTime;
    const end = open ? Math.max(start, now) : Math.max(start, Date.parse(a.endTime!));
    min = Math.min(min, start);
    max = Math.max(max, end);
    const key = `${a.taskInstanceId}`;
    let row = rows.get(key);
    if (!row) {
      row = { taskName: a.taskName, taskInstanceId: a.taskInstanceId, bars: [] };
      rows.set(key, row);
    }
    row.bars.push({ ...a, start, end, open });
  }
  if (!Number.isFinite(min)) min = now;
  if (!Number.isFinite(max) || max <= min) max = min + 1000;
  return { rows: [...rows.values()], min, max, ticks: ticks(min, max, tickTarget) };
}
