import { describe, expect, it } from 'vitest';
import type { BackfillResponse, BackfillRun } from '../api/types';
import { previewText, skipReason } from './backfill';

const run = (bizDate: string, reprocessed = false): BackfillRun => ({
  bizDate,
  runKey: `sched:1:${bizDate}`,
  scheduleTime: `${bizDate}T00:00:00Z`,
  statusUrl: '/api/v1/dags/instances/by-key/x',
  reprocessed,
});

describe('backfill preview text', () => {
  it('counts dates that run and names the skipped ones', () => {
    const answer: BackfillResponse = {
      dagId: 1, dryRun: true,
      runs: [run('2026-11-01'), run('2026-11-03'), run('2026-11-04')],
      skipped: [{ bizDate: '2026-11-02', reason: 'already has run 12 (SUCCESS)', runId: 12 }],
    };
    expect(previewText(answer)).toBe('3 dates will run, 1 skipped: 2026-11-02 already ran (success)');
  });

  it('says when nothing is skipped, and counts reprocessed dates', () => {
    expect(previewText({ dagId: 1, dryRun: true, runs: [run('2026-11-01')], skipped: [] })).toBe('1 date will run');
    expect(
      previewText({ dagId: 1, dryRun: true, runs: [run('2026-11-01', true), run('2026-11-02')], skipped: [] }),
    ).toBe('2 dates will run (1 again in place)');
  });

  it('handles an empty range and long skip lists', () => {
    expect(previewText({ dagId: 1, dryRun: true, runs: [], skipped: [] })).toBe('No business dates in this range.');
    const skipped = Array.from({ length: 7 }, (_, i) => ({
      bizDate: `2026-11-0${i + 1}`,
      reason: `already has run ${i} (FAILED); reprocess failed runs it again`,
      runId: i,
    }));
    const text = previewText({ dagId: 1, dryRun: true, runs: [], skipped });
    expect(text).toMatch(/^0 dates will run, 7 skipped: 2026-11-01 already ran \(failed\);/);
    expect(text).toMatch(/and 2 more$/);
  });

  it('shortens the API\'s reasons', () => {
    expect(skipReason({ bizDate: 'd', reason: "schedule 'nightly' does not fire for this business date", runId: null }))
      .toBe("schedule 'nightly' does not fire then");
    expect(skipReason({ bizDate: 'd', reason: 'run 3 cannot run again now: live', runId: 3 }))
      .toBe('run 3 cannot run again now: live');
  });
});
