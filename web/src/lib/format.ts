// Times and durations as an operator reads them: local wall-clock times,
// short durations.

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `2026-11-02 08:30:12` in the browser's zone, or `—`. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `08:30:12` in the browser's zone. */
export function formatClock(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `850ms`, `12.3s`, `3m 05s`, `2h 04m`, `3d 02h`. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.floor(s)}s`;
  const totalSeconds = Math.floor(s);
  const m = Math.floor(totalSeconds / 60);
  if (m < 60) return `${m}m ${pad(totalSeconds % 60)}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${pad(m % 60)}m`;
  return `${Math.floor(h / 24)}d ${pad(h % 24)}h`;
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

/** `12s ago`, `5m ago`, `in 3h`. */
export function relativeTime(iso: string | null | undefined, now: number): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const diff = t - now;
  const text = formatDuration(Math.abs(diff)).replace(/\.\d/, '').split(' ')[0] ?? '';
  if (Math.abs(diff) < 1000) return 'now';
  return diff < 0 ? `${text} ago` : `in ${text}`;
}

/** Today's date, `YYYY-MM-DD`, in the browser's zone. */
export function today(now: Date = new Date()): string {
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

/** `n thing` / `n things`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
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
