import { describe, expect, it } from 'vitest';
import { durationMs, formatDuration, formatZoned, plural, relativeTime } from './format';

describe('formatting', () => {
  it('shortens durations', () => {
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(12_340)).toBe('12s');
    expect(formatDuration(4_200)).toBe('4.2s');
    expect(formatDuration(185_000)).toBe('3m 05s');
    expect(formatDuration(2 * 3600_000 + 4 * 60_000)).toBe('2h 04m');
    expect(formatDuration(null)).toBe('—');
  });

  it('measures running durations to now', () => {
    const start = '2026-01-01T00:00:00Z';
    expect(durationMs(start, '2026-01-01T00:00:10Z', 0)).toBe(10_000);
    expect(durationMs(start, null, Date.parse(start) + 5000)).toBe(5000);
    expect(durationMs(null, null, 0)).toBeNull();
  });

  it('says how long ago', () => {
    const now = Date.parse('2026-01-01T00:10:00Z');
    expect(relativeTime('2026-01-01T00:09:30Z', now)).toBe('30s ago');
    expect(relativeTime('2026-01-01T03:10:00Z', now)).toBe('in 3h');
    expect(plural(1, 'date')).toBe('1 date');
    expect(plural(3, 'date')).toBe('3 dates');
  });

  it('shows a zoned time as written', () => {
    expect(formatZoned('2026-12-03T02:00:00+08:00')).toBe('2026-12-03 02:00:00 +08:00');
    expect(formatZoned('2026-12-03T02:00:00.123Z')).toBe('2026-12-03 02:00:00 UTC');
    expect(formatZoned(null)).toBe('—');
  });
});
