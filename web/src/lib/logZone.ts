// The zone a log's times are written in. The runner writes its header's
// start time in the run's time zone, named after the offset
// (`Start Time: 2026-12-06 09:10:00.123 +08:00 (Asia/Shanghai)`), and a
// task's own output follows the same clock as often as not; the page shows
// every other time in the zone the user picked, so the two can differ.

import type { LogEntry } from './logModel';

/** How far into a log its header ends. */
const HEADER_LINES = 12;

const START_TIME = /^Start Time: .+ \(([^()\s]+)\)$/;

/** The zone named in the log's header, or `null` when it has none (a cut or foreign log). */
export function logTimeZone(entries: readonly LogEntry[]): string | null {
  for (const entry of entries.slice(0, HEADER_LINES)) {
    if (entry.kind !== 'line') continue;
    const zone = START_TIME.exec(entry.text)?.[1];
    if (zone) return zone;
  }
  return null;
}
