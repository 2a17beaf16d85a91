// Every page in English, in Chinese and in the pseudo-locale, each in a
// browser whose language is that one. In the pseudo-locale (en-XA) every
// catalogue string is wrapped in ⟦…⟧, so visible text outside the markers,
// outside `translate="no"` elements (names, logs, code) and outside
// `data-server-text` elements (what the API wrote) did not come from the
// catalogue: a page that shows any fails. Each language's pass goes through
// every page at a desktop's width, then again at a phone's, where no page may
// scroll sideways. The Chinese screenshots are for people to read
// (test-results/screenshots/zh-CN-*.png, zh-CN-390-*.png at the phone's width).

import { type Browser, type Page, expect, test } from '@playwright/test';
import { api, base, shot, signIn, triggerAndWait } from './support';

/** The pages of the UI, with ids of the examples' real rows. */
async function everyPage(): Promise<[string, string][]> {
  const client = await api();
  const dag = await (await client.get('/api/v1/dags/by-name/example_diamond')).json();
  await client.dispose();
  const run = await triggerAndWait(dag.id, 'did not succeed', (r) => r.status === 'SUCCESS');
  const taskInstance = run.taskInstances[0]?.id;
  return [
    ['/dags', 'dags'],
    [`/dags/${dag.id}?tab=grid`, 'dag-grid'],
    [`/dags/${dag.id}?tab=graph`, 'dag-graph'],
    [`/dags/${dag.id}?tab=runs`, 'dag-runs'],
    [`/dags/${dag.id}?tab=schedules`, 'dag-schedules'],
    [`/dags/${dag.id}?tab=definition`, 'dag-definition'],
    [`/dags/${dag.id}/trigger`, 'trigger'],
    [`/dags/${dag.id}/backfill`, 'backfill'],
    [`/dags/${dag.id}/edit`, 'editor'],
    [`/runs/${run.id}`, 'run'],
    [`/task-instances/${taskInstance}`, 'task-instance'],
    ['/runners', 'runners'],
    ['/alerts', 'alerts'],
    ['/audit', 'audit'],
    ['/datasets', 'datasets'],
    ['/datasets/ods.orders', 'dataset'],
    ['/no/such/page', 'not-found'],
  ];
}

/**
 * Visible text and labels that are neither inside ⟦…⟧ nor inside a
 * `translate="no"` element, nor free of letters (times, numbers, dashes).
 */
async function untranslated(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const letters = /\p{L}/u;
    const outsideMarkers = (text: string) => {
      let rest = text;
      for (let before = ''; before !== rest; ) {
        before = rest;
        rest = rest.replace(/⟦[^⟦⟧]*⟧/g, ' ');
      }
      return rest;
    };
    // User content and names (`translate="no"`), and what the server
    // wrote (`data-server-text`: its messages, in the reader's words where
    // the catalogue knows their code and in English otherwise, and the
    // cron descriptions).
    const exempt = (el: Element) => el.closest('[translate="no"], [data-server-text], script, style, noscript') !== null;
    const shown = (el: Element) => el.tagName === 'OPTION' || el.checkVisibility({ visibilityProperty: true });
    const problems: string[] = [];
    // Joined in document order: a sentence with a link inside it is one
    // catalogue string split over several text nodes.
    const pieces: string[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (el && !exempt(el) && shown(el)) pieces.push(node.textContent ?? '');
    }
    for (const snippet of outsideMarkers(pieces.join('')).split(/\s{2,}|\n/)) {
      if (letters.test(snippet)) problems.push(`text "${snippet.trim().slice(0, 80)}"`);
    }
    for (const el of document.body.querySelectorAll('[title], [placeholder], [aria-label], [alt]')) {
      if (exempt(el)) continue;
      for (const name of ['title', 'placeholder', 'aria-label', 'alt']) {
        const value = el.getAttribute(name);
        if (value && letters.test(outsideMarkers(value))) {
          problems.push(`${name}="${value.slice(0, 80)}" on <${el.tagName.toLowerCase()}>`);
        }
      }
    }
    return problems;
  });
}

/** Waits until the page has its data: no spinner left. */
async function settled(page: Page) {
  await expect(page.locator('main')).toBeVisible();
  await expect(page.locator('.state-loading')).toHaveCount(0, { timeout: 15_000 });
}

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

async function inLanguage(browser: Browser, locale: string) {
  const context = await browser.newContext({ locale, viewport: DESKTOP });
  return { context, page: await context.newPage() };
}

/** Whether the document is wider than the window: the user has to scroll sideways. */
async function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}

/**
 * Opens every page at a desktop's width, then at a phone's, screenshots
 * named `<prefix>-<page>` and `<prefix>-390-<page>`, and calls `check` on
 * each; returns the pages that scrolled sideways at the phone's width.
 */
async function visitEveryPage(page: Page, pages: [string, string][], prefix: string, check: (path: string) => Promise<void>) {
  const sideways: string[] = [];
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    for (const [path, name] of pages) {
      await page.goto(`${base()}${path}`);
      await settled(page);
      await check(path);
      if (size === PHONE && (await scrollsSideways(page))) sideways.push(path);
      await shot(page, size === PHONE ? `${prefix}-390-${name}` : `${prefix}-${name}`);
    }
  }
  return sideways;
}

test('the pseudo-locale shows no text that did not come from the catalogue, on any page', async ({ browser }) => {
  test.setTimeout(180_000);
  const pages = await everyPage();
  const { context, page } = await inLanguage(browser, 'en-XA');
  await page.goto(`${base()}/signin`);
  await expect(page.getByTestId('signin-submit')).toBeVisible();
  const found: string[] = (await untranslated(page)).map((p) => `/signin: ${p}`);
  await signIn(page, 'ADMIN');
  const sideways = await visitEveryPage(page, pages, 'en-XA', async (path) => {
    found.push(...(await untranslated(page)).map((p) => `${path}: ${p}`));
  });
  await context.close();
  expect(found, found.join('\n')).toEqual([]);
  expect(sideways, 'pages that scroll sideways at 390 px').toEqual([]);
});

test('every page draws in Chinese, in a browser whose language is Chinese', async ({ browser }) => {
  test.setTimeout(180_000);
  const pages = await everyPage();
  const { context, page } = await inLanguage(browser, 'zh-CN');
  await page.goto(`${base()}/signin`);
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  await shot(page, 'zh-CN-signin');
  await page.setViewportSize(PHONE);
  await shot(page, 'zh-CN-390-signin');
  await page.setViewportSize(DESKTOP);
  await signIn(page, 'ADMIN');
  await expect(page.getByRole('navigation').getByRole('link', { name: '工作流' })).toBeVisible();
  const sideways = await visitEveryPage(page, pages, 'zh-CN', async () => {
    await expect(page.locator('.banner-error')).toHaveCount(0);
  });
  await context.close();
  expect(sideways, 'pages that scroll sideways at 390 px').toEqual([]);
});

test('a DAG the API refuses is explained in the reader’s language', async ({ browser }) => {
  const { context, page } = await inLanguage(browser, 'zh-CN');
  await signIn(page, 'ADMIN', '/dags/new');
  await page.getByTestId('dag-name-input').fill('zh_refused');
  await page.getByTestId('canvas-add-task').click();
  await page.getByTestId('task-name').fill('load');
  await page.getByTestId('task-command').fill('true');
  await page.getByText('调度与重试').click();
  await page.getByLabel('优先级（1–10）').fill('11');
  await page.getByTestId('canvas-save').click();
  // The API's code `dag.priority` with its task, in Chinese words.
  await expect(page.getByText('任务「load」：优先级须为 1–10，而不是 11。').first()).toBeVisible();
  await shot(page, 'zh-CN-editor-refused');
  await context.close();
});

test('the language switch changes the page without a reload and is remembered', async ({ browser }) => {
  const { context, page } = await inLanguage(browser, 'en-US');
  await signIn(page, 'ADMIN');
  const nav = page.getByRole('navigation');
  await expect(nav.getByRole('link', { name: 'Datasets' })).toBeVisible();
  await expect(page.locator('html')).toHaveAttribute('lang', 'en');
  // A reload would lose this.
  await page.evaluate(() => Object.assign(window, { notReloaded: true }));
  await page.getByTestId('language').selectOption('zh-CN');
  await expect(nav.getByRole('link', { name: '数据集' })).toBeVisible();
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  expect(await page.evaluate(() => (window as { notReloaded?: boolean }).notReloaded)).toBe(true);
  await page.reload();
  await expect(nav.getByRole('link', { name: '数据集' })).toBeVisible();
  await page.getByTestId('language').selectOption('en');
  await expect(nav.getByRole('link', { name: 'Datasets' })).toBeVisible();
  await context.close();
});
