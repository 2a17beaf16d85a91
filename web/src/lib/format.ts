// Times and durations as an operator reads them: local wall-clock times,
// short durations in the UI's language.

import i18next from 'i18next';
import { currentTimeZone } from './timeZone';

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The parts of `date` in the chosen zone, 24-hour clock. */
function partsOf(date: Date): Record<string, string> {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: currentTimeZone(),
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(date);
  return Object.fromEntries(parts.map((p) => [p.type, p.value]));
}

/** `2026-11-02 08:30:12` in the chosen zone ([`currentTimeZone`]), or `—`. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = partsOf(d);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

/** `08:30:12` in the chosen zone. */
export function formatClock(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = partsOf(d);
  return `${p.hour}:${p.minute}:${p.second}`;
}

/** The chosen zone with its offset at `iso`: `Asia/Shanghai (UTC+08:00)`. */
export function zoneLabel(iso: string): string {
  const zone = currentTimeZone();
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return zone;
  const offset =
    new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
      .formatToParts(d)
      .find((p) => p.type === 'timeZoneName')
      ?.value.replace(/^GMT$/, 'GMT+00:00')
      .replace(/^GMT/, 'UTC') ?? '';
  return `${zone} (${offset})`;
}

/** `850ms`, `12.3s`, `3m 05s`, `2h 04m`, `3d 02h` (in English). */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 0) ms = 0;
  const t = i18next.t;
  if (ms < 1000) return t('duration.milliseconds', { ms: Math.round(ms) });
  const s = ms / 1000;
  if (s < 60) return t('duration.seconds', { s: s < 10 ? s.toFixed(1) : Math.floor(s) });
  return formatSpan(Math.floor(s));
}

/** Whole seconds as minutes, hours or days and the next unit down. */
function formatSpan(totalSeconds: number): string {
  const t = i18next.t;
  const m = Math.floor(totalSeconds / 60);
  if (m < 1) return t('duration.seconds', { s: totalSeconds });
  if (m < 60) return t('duration.minutes', { m, s: pad(totalSeconds % 60) });
  const h = Math.floor(m / 60);
  if (h < 24) return t('duration.hours', { h, m: pad(m % 60) });
  return t('duration.days', { d: Math.floor(h / 24), h: pad(h % 24) });
}

/** Milliseconds from `start` to `end` (or to `now` while it runs). */
export function durationMs(
  start: string | null | undefined,
  end: string | null | undefined,
  now: number,
): number | null {
  if (!start) return null;
  const a = Date.parse(start);
  const b = end ? Date.parse(end) : now;
  if (Number.isNaN(a) || Number.isNaN(b)) return null;
  return Math.max(0, b - a);
}

/** `12s ago`, `5m ago`, `in 3h` (in English): the largest unit only. */
export function relativeTime(iso: string | null | undefined, now: number): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const diff = t - now;
  if (Math.abs(diff) < 1000) return i18next.t('relative.now');
  const seconds = Math.floor(Math.abs(diff) / 1000);
  const [key, size] = RELATIVE_UNITS.find(([, size]) => seconds >= size) ?? RELATIVE_UNITS[3];
  const span = i18next.t(key, { n: Math.floor(seconds / size) });
  return i18next.t(diff < 0 ? 'relative.past' : 'relative.future', { span });
}

const RELATIVE_UNITS = [
  ['relative.days', 86_400],
  ['relative.hours', 3_600],
  ['relative.minutes', 60],
  ['relative.seconds', 1],
] as const;

/** Today's date, `YYYY-MM-DD`, in the chosen zone. */
export function today(now: Date = new Date()): string {
  const p = partsOf(now);
  return `${p.year}-${p.month}-${p.day}`;
}

/**
 * An RFC 3339 time as written in its own zone (`2026-12-03 02:00:00 +08:00`):
 * the API gives fire times in the schedule's zone, which may not be the
 * browser's.
 */
export function formatZoned(rfc: string | null | undefined): string {
  if (!rfc) return '—';
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})$/.exec(rfc);
  if (!m) return formatTime(rfc);
  return `${m[1]} ${m[2]} ${m[3] === 'Z' ? 'UTC' : m[3]}`;
}
