// The sentence a backfill's dry run becomes: what would run, what would be
// skipped and why, in the UI's language.

import i18next from 'i18next';
import type { BackfillResponse, BackfillSkip } from '../api/types';
import { statusLabel } from './status';

/** Most skipped dates named one by one. */
const NAMED = 5;

/** A skip's reason, short: `already ran (success)`; the API's own reason when it is none of the known ones. */
export function skipReason(skip: BackfillSkip): string {
  const ran = /^already has run \d+ \(([A-Z_]+)\)/.exec(skip.reason);
  if (ran) {
    return i18next.t('backfill:skip.alreadyRan', { status: statusLabel(ran[1]) });
  }
  const noFire = /^schedule '([^']*)' does not fire/.exec(skip.reason);
  if (noFire) return i18next.t('backfill:skip.noFire', { schedule: noFire[1] });
  return skip.reason;
}

/**
 * `3 dates will run, 1 skipped: 2026-11-02 already ran (SUCCESS)`;
 * reprocessed dates are counted as running again in place.
 */
export function previewText(answer: BackfillResponse): string {
  const t = i18next.t;
  const count = answer.runs.length;
  const skipped = answer.skipped.length;
  if (count === 0 && skipped === 0) return t('backfill:preview.none');
  const again = answer.runs.filter((r) => r.reprocessed).length;
  if (skipped === 0) {
    return again > 0 ? t('backfill:preview.runAgain', { count, again }) : t('backfill:preview.run', { count });
  }
  const named = [...answer.skipped]
    .sort((a, b) => a.bizDate.localeCompare(b.bizDate))
    .slice(0, NAMED)
    .map((s) => t('backfill:preview.skippedDate', { date: s.bizDate, reason: skipReason(s) }));
  if (skipped > NAMED) named.push(t('backfill:preview.more', { n: skipped - NAMED }));
  const list = named.join(t('backfill:preview.separator'));
  return again > 0
    ? t('backfill:preview.runAgainSkipped', { count, again, skipped, list })
    : t('backfill:preview.runSkipped', { count, skipped, list });
}
