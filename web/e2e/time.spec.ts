// Times in the zone the user picks: every time on a page moves with it, the
// zone is named on hover, and a business date, which is a date, stays put.

import { expect, test } from '@playwright/test';
import { api, shot, signIn, triggerAndWait } from './support';

test('times follow the zone the user picks, named on hover, and business dates do not move', async ({ page }) => {
  const client = await api();
  const dag = await (await client.get('/api/v1/dags/by-name/example_diamond')).json();
  await client.dispose();
  const run = await triggerAndWait(dag.id, 'did not start', (r) => r.startTime !== null);
  const instant = new Date(run.startTime ?? '');
  /** The instant written as `YYYY-MM-DD HH:MM:SS` at `offsetMinutes` from UTC. */
  const at = (offsetMinutes: number) =>
    new Date(instant.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 19).replace('T', ' ');

  await signIn(page, 'ADMIN', `/runs/${run.id}`);
  const startedAt = page.getByTestId('run-started').locator('time');
  await page.getByTestId('time-zone').selectOption('UTC');
  await expect(startedAt).toHaveText(at(0));
  await expect(startedAt).toHaveAttribute('title', 'UTC (UTC+00:00)');
  // China keeps no daylight saving: eight hours ahead all year.
  await page.getByTestId('time-zone').selectOption('Asia/Shanghai');
  await expect(startedAt).toHaveText(at(480));
  await expect(startedAt).toHaveAttribute('title', 'Asia/Shanghai (UTC+08:00)');
  await expect(page.getByTestId('run-biz-date')).toHaveText(run.bizDate);
  await shot(page, '22-run-in-shanghai-time');
  // Remembered: a new visit shows the same zone.
  await page.reload();
  await expect(startedAt).toHaveText(at(480));
  await page.getByTestId('time-zone').selectOption('');
});
