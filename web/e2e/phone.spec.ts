// The UI on a phone (390 px): the top bar folds into a menu, and what is
// wider than the screen scrolls inside its own box while the document never
// scrolls sideways. Every page's layout at this width is checked in
// e2e/languages.spec.ts; this file checks what only a phone has.

import { type Locator, type Page, expect, test } from '@playwright/test';
import { api, base, createDag, shot, signIn, triggerAndWait } from './support';

const PHONE = { width: 390, height: 844 };

/** Whether the document is wider than the window: the user has to scroll sideways. */
async function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}

/** Whether `box` holds more than its width shows and scrolls to it. */
async function scrollsInside(box: Locator): Promise<boolean> {
  return box.evaluate((el) => {
    if (el.scrollWidth <= el.clientWidth) return false;
    el.scrollLeft = el.scrollWidth;
    const moved = el.scrollLeft > 0;
    el.scrollLeft = 0;
    return moved;
  });
}

/** `box` scrolls sideways inside itself and the document does not. */
async function expectOwnScroll(page: Page, box: Locator) {
  await expect(box).toBeVisible();
  await expect.poll(() => scrollsInside(box)).toBe(true);
  expect(await scrollsSideways(page)).toBe(false);
}

test('on a phone the navigation folds into a menu that closes when the user goes to a page', async ({ browser }) => {
  const context = await browser.newContext({ locale: 'en-US', viewport: PHONE });
  const page = await context.newPage();
  await signIn(page, 'ADMIN');
  const menu = page.getByTestId('menu-button');
  const datasets = page.getByRole('link', { name: 'Datasets' });
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(datasets).toBeHidden();
  await expect(page.getByTestId('language')).toBeHidden();

  await menu.click();
  await expect(menu).toHaveAttribute('aria-expanded', 'true');
  await expect(datasets).toBeVisible();
  // The switches and who is signed in are in the menu, within reach.
  await expect(page.getByTestId('language')).toBeInViewport();
  await expect(page.getByTestId('time-zone')).toBeInViewport();
  await expect(page.getByTestId('whoami')).toBeInViewport();
  expect(await scrollsSideways(page)).toBe(false);
  await shot(page, 'phone-menu-open');

  await datasets.click();
  await expect(page).toHaveURL(/\/datasets$/);
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(datasets).toBeHidden();
  await expect(page.getByTestId('datasets-table')).toBeVisible();

  await menu.click();
  await expect(datasets).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(datasets).toBeHidden();
  await context.close();
});

test('on a phone the grid, the Gantt, the log and a wide table scroll inside their own box', async ({ browser }) => {
  test.setTimeout(90_000);
  const dagId = await createDag({
    name: 'phone_wide',
    tasks: [
      {
        name: 'report_a_long_line',
        type: 'SHELL',
        command: 'echo "rows loaded into ods.orders for every region and every channel, partitioned by business date: 1234567"',
      },
    ],
  });
  // Enough runs that the grid's columns outgrow a phone.
  const client = await api();
  for (let i = 0; i < 11; i++) {
    const answer = await client.post(`/api/v1/dags/${dagId}/trigger`, { data: {} });
    expect(answer.status(), await answer.text()).toBe(202);
  }
  await client.dispose();
  const run = await triggerAndWait(dagId, 'did not succeed', (r) => r.status === 'SUCCESS');
  const taskInstance = run.taskInstances[0]!.id;

  const context = await browser.newContext({ locale: 'en-US', viewport: PHONE });
  const page = await context.newPage();
  await signIn(page, 'ADMIN', `/dags/${dagId}?tab=grid`);
  await expect(page.getByTestId('grid-cell').first()).toBeVisible();
  await expectOwnScroll(page, page.locator('.grid-scroll'));
  await shot(page, 'phone-grid');

  await page.goto(`${base()}/dags/${dagId}?tab=runs`);
  await expectOwnScroll(page, page.locator('.table-scroll:has([data-testid="runs-table"])'));

  await page.goto(`${base()}/runs/${run.id}`);
  await expect(page.getByTestId('gantt-bar')).toHaveCount(1);
  await expectOwnScroll(page, page.getByTestId('gantt'));
  await shot(page, 'phone-gantt');

  await page.goto(`${base()}/task-instances/${taskInstance}`);
  const log = page.getByTestId('log-view');
  await expect(log).toContainText('partitioned by business date');
  await expectOwnScroll(page, log);
  await shot(page, 'phone-log');
  await context.close();
});

test('the log says in which zone its times are written when the page shows another', async ({ browser }) => {
  const client = await api();
  const dag = await (await client.get('/api/v1/dags/by-name/example_diamond')).json();
  await client.dispose();
  const run = await triggerAndWait(dag.id, 'did not succeed', (r) => r.status === 'SUCCESS');
  const context = await browser.newContext({ locale: 'en-US', viewport: PHONE });
  const page = await context.newPage();
  await signIn(page, 'ADMIN', `/task-instances/${run.taskInstances[0]!.id}`);
  const header = page.getByTestId('log-line').filter({ hasText: 'Start Time:' });
  const written = /\(([^()]+)\)$/.exec((await header.textContent()) ?? '')?.[1] ?? '';
  expect(written, 'the zone the log header names').not.toBe('');
  const label = page.getByTestId('log-zone');

  const pick = async (zone: string) => {
    await page.getByTestId('menu-button').click();
    await page.getByTestId('time-zone').selectOption(zone);
    await page.keyboard.press('Escape');
  };
  await pick(written === 'Europe/Paris' ? 'UTC' : 'Europe/Paris');
  await expect(label).toContainText(written);
  await shot(page, 'phone-log-zone');
  await pick(written);
  await expect(page.getByTestId('log-line').first()).toBeVisible();
  await expect(label).toHaveCount(0);
  await context.close();
});
