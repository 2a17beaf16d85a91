// The sentence a backfill's dry run becomes: what would run, what would be
// skipped and why.

import type { BackfillResponse, BackfillSkip } from '../api/types';
import { plural } from './format';

/** Most skipped dates named one by one. */
const NAMED = 5;

/** A skip's reason, short: `already ran (SUCCESS)`. */
export function skipReason(skip: BackfillSkip): string {
  const ran = /^already has run \d+ \(([A-Z_]+)\)/.exec(skip.reason);
  if (ran) return `already ran (${ran[1]})`;
  const noFire = /^schedule '([^']*)' does not fire/.exec(skip.reason);
  if (noFire) return `schedule '${noFire[1]}' does not fire then`;
  return skip.reason;
}

/**
 * `3 dates will run, 1 skipped: 2026-11-02 already ran (SUCCESS)`;
 * reprocessed dates are counted as running again in place.
 */
export function previewText(answer: BackfillResponse): string {
  const runs = answer.runs.length;
  const skipped = answer.skipped.length;
  if (runs === 0 && skipped === 0) return 'No business dates in this range.';
  const again = answer.runs.filter((r) => r.reprocessed).length;
  let text = `${plural(runs, 'date')} will run`;
  if (again > 0) text += ` (${again} again in place)`;
  if (skipped === 0) return text;
  const named = [...answer.skipped]
    .sort((a, b) => a.bizDate.localeCompare(b.bizDate))
    .slice(0, NAMED)
    .map((s) => `${s.bizDate} ${skipReason(s)}`);
  if (skipped > NAMED) named.push(`and ${skipped - NAMED} more`);
  return `${text}, ${skipped} skipped: ${named.join('; ')}`;
}
