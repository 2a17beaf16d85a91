import i18next from 'i18next';
import { describe, expect, it } from 'vitest';
import zh from '../i18n/locales/zh-CN/index.ts';
import { durationMs, formatClock, formatDuration, formatTime, formatZoned, relativeTime, today, zoneLabel } from './format';
import { chooseTimeZone } from './timeZone';

describe('formatting', () => {
  it('shortens durations', () => {
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(12_340)).toBe('12s');
    expect(formatDuration(4_200)).toBe('4.2s');
    expect(formatDuration(185_000)).toBe('3m 05s');
    expect(formatDuration(2 * 3600_000 + 4 * 60_000)).toBe('2h 04m');
    expect(formatDuration(null)).toBe('—');
  });

  it('writes durations and relative times in Chinese when the UI is', async () => {
    i18next.addResourceBundle('zh-CN', 'common', zh.common);
    await i18next.changeLanguage('zh-CN');
    try {
      expect(formatDuration(850)).toBe('850毫秒');
      expect(formatDuration(185_000)).toBe('3分05秒');
      expect(formatDuration(2 * 3600_000 + 4 * 60_000)).toBe('2小时04分');
      const now = Date.parse('2026-01-01T00:10:00Z');
      expect(relativeTime('2026-01-01T00:09:30Z', now)).toBe('30秒前');
      expect(relativeTime('2026-01-01T03:10:00Z', now)).toBe('3小时后');
    } finally {
      await i18next.changeLanguage('en');
    }
  });

  it('shows every time in the zone the user chose, and names it', () => {
    const instant = '2026-12-03T02:00:00+08:00';
    try {
      chooseTimeZone('UTC');
      expect(formatTime(instant)).toBe('2026-12-02 18:00:00');
      expect(formatClock(instant)).toBe('18:00:00');
      expect(zoneLabel(instant)).toBe('UTC (UTC+00:00)');
      expect(today(new Date(instant))).toBe('2026-12-02');
      chooseTimeZone('Asia/Shanghai');
      expect(formatTime(instant)).toBe('2026-12-03 02:00:00');
      expect(zoneLabel(instant)).toBe('Asia/Shanghai (UTC+08:00)');
      expect(today(new Date(instant))).toBe('2026-12-03');
      chooseTimeZone('America/New_York');
      expect(formatTime('2026-07-01T12:00:00Z')).toBe('2026-07-01 08:00:00');
      expect(zoneLabel('2026-07-01T12:00:00Z')).toBe('America/New_York (UTC-04:00)');
    } finally {
      chooseTimeZone(null);
    }
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
  });

  it('shows a zoned time as written', () => {
    expect(formatZoned('2026-12-03T02:00:00+08:00')).toBe('2026-12-03 02:00:00 +08:00');
    expect(formatZoned('2026-12-03T02:00:00.123Z')).toBe('2026-12-03 02:00:00 UTC');
    expect(formatZoned(null)).toBe('—');
  });
});
