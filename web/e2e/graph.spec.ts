// The DAG graph shows every dependency a task has, not only the same-run
// ones: other runs, other DAGs, `after:` schedules and datasets as stubs,
// each kind of edge in the legend; and stays readable at 300 tasks.

import { type Browser, type Page, expect, test } from '@playwright/test';
import { api, base, createDag, shot, signIn, triggerAndWait } from './support';

/** The React Flow node around the graph node (task or stub) `selector`. */
const flowNode = (page: Page, selector: string) => page.locator(`.react-flow__node:has(${selector})`);
const taskNode = (page: Page, task: string) => flowNode(page, `[data-testid="graph-node"][data-task="${task}"]`);

async function dagId(name: string): Promise<number> {
  const client = await api();
  const dag = await (await client.get(`/api/v1/dags/by-name/${name}`)).json();
  await client.dispose();
  return dag.id as number;
}

test('every kind of dependency is drawn with its legend, and a stub leads to the other DAG', async ({ page }) => {
  const upstream = await createDag({
    name: 'graph_upstream',
    tasks: [{ name: 'land', type: 'SHELL', command: 'echo landing' }],
  });
  const id = await createDag({
    name: 'graph_kinds',
    schedules: [{ name: 'after_upstream', after: 'graph_upstream' }],
    tasks: [
      { name: 'extract', type: 'SHELL', command: 'echo extract' },
      { name: 'audit', type: 'SHELL', command: 'echo audit' },
      {
        name: 'transform',
        type: 'SHELL',
        command: 'echo transform',
        dependsOn: ['extract', { task: 'audit', type: 'WEAK' }, 'graph_upstream/land'],
      },
      {
        name: 'report',
        type: 'SHELL',
        command: 'echo report',
        dependsOn: ['transform', { task: 'report', offsetDay: -1 }],
        outputs: ['graph.report/${bizdate}'],
      },
      { name: 'unrelated', type: 'SHELL', command: 'echo alone' },
    ],
  });
  await signIn(page, 'VIEWER', `/dags/${id}?tab=graph`);
  await expect(page.getByTestId('graph-node')).toHaveCount(5);

  const legend = page.getByTestId('graph-legend');
  await expect(legend.locator('li')).toHaveText([
    'dependency',
    'weak dependency (any result)',
    "another business date's run",
    "another DAG's task",
    'after: another DAG',
    'writes a dataset',
  ]);
  await expect(page.locator('[data-testid="graph-stub"][data-kind="OTHER_RUN"]')).toContainText('earlier run (\u22121 d)');
  await expect(page.locator('[data-testid="graph-stub"][data-kind="DATASET"]')).toContainText('graph.report');
  await expect(page.locator('[data-testid="graph-stub"][data-kind="DAG"]')).toContainText('graph_upstream');
  await expect(page.locator('.react-flow__edge-text').filter({ hasText: '\u22121 d' })).toHaveCount(1);

  // Search: the match is highlighted, the rest dimmed.
  await page.getByTestId('graph-search').fill('TRANSF');
  await expect(page.getByTestId('graph-search-count')).toHaveText('1 match');
  await expect(taskNode(page, 'transform')).toHaveClass(/gmatch/);
  await expect(taskNode(page, 'extract')).toHaveClass(/gdim/);
  await page.getByTestId('graph-search').press('Escape');
  await expect(taskNode(page, 'extract')).not.toHaveClass(/gdim/);

  // A click shows what the task waits on and what waits on it; the rest is dimmed.
  await page.locator('[data-testid="graph-node"][data-task="transform"]').click();
  await expect(page.getByTestId('graph-focus')).toContainText('4 upstream · 2 downstream');
  await expect(taskNode(page, 'unrelated')).toHaveClass(/gdim/);
  for (const related of ['extract', 'audit', 'report']) await expect(taskNode(page, related)).not.toHaveClass(/gdim/);
  await expect(flowNode(page, '[data-stub="dag/graph_upstream/land"]')).not.toHaveClass(/gdim/);
  await shot(page, 'graph-kinds');
  // Every colour of the graph follows the theme.
  await page.getByTestId('theme').selectOption('dark');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await shot(page, 'graph-kinds-dark');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('graph-focus')).toHaveCount(0);
  await expect(taskNode(page, 'unrelated')).not.toHaveClass(/gdim/);

  await page.locator('[data-stub="dag/graph_upstream/land"]').getByTestId('graph-stub-link').click();
  await expect(page).toHaveURL(new RegExp(`/dags/${upstream}(\\?|$)`));
  await expect(page.getByTestId('dag-name')).toHaveText('graph_upstream');
});

test('a 300-task DAG draws with a minimap, and search finds a task far away', async ({ page }) => {
  // A tree: task_i waits for task_(i-1)/3.
  const tasks = Array.from({ length: 300 }, (_, i) => ({
    name: `task_${i}`,
    type: 'SHELL',
    command: 'true',
    ...(i > 0 ? { dependsOn: [`task_${Math.floor((i - 1) / 3)}`] } : {}),
  }));
  const id = await createDag({ name: 'graph_300', tasks });
  await signIn(page, 'VIEWER', `/dags/${id}?tab=graph`);
  await expect(page.locator('.react-flow__minimap')).toBeVisible();
  await page.getByTestId('graph-search').fill('task_250');
  await expect(page.getByTestId('graph-search-count')).toHaveText('1 match');
  await page.getByTestId('graph-search').press('Enter');
  const found = page.locator('[data-testid="graph-node"][data-task="task_250"]');
  await expect(found).toBeInViewport();
  await expect(taskNode(page, 'task_250')).toHaveClass(/gmatch/);
  await shot(page, 'graph-300');
});

async function warehouseIn(browser: Browser, locale: string, name: string) {
  const context = await browser.newContext({ locale, viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await signIn(page, 'VIEWER', `/dags/${await dagId('example_warehouse')}?tab=graph`);
  await expect(page.getByTestId('graph-node')).toHaveCount(60);
  await expect(page.getByTestId('graph-stub')).toHaveCount(5);
  await expect(page.getByTestId('graph-legend').locator('li')).toHaveCount(5);
  await shot(page, name);
  return { context, page };
}

test('the warehouse example reads in English and in Chinese', async ({ browser }) => {
  const english = await warehouseIn(browser, 'en-US', 'graph-warehouse');
  // The quality summary, found by name, waits weakly for every check.
  const search = english.page.getByTestId('graph-search');
  await search.fill('dq_audit');
  await search.press('Enter');
  await english.page.locator('[data-testid="graph-node"][data-task="dq_audit_summary"]').click();
  await search.press('Escape');
  await expect(english.page.getByTestId('graph-focus')).toContainText('19 upstream · 2 downstream');
  await shot(english.page, 'graph-warehouse-focus');
  await english.context.close();

  const chinese = await warehouseIn(browser, 'zh-CN', 'zh-CN-graph-warehouse');
  await expect(chinese.page.getByTestId('graph-legend')).toContainText('弱依赖');
  await chinese.context.close();
});

test('the editor makes a dependency weak, saves it so, and the graph draws it dashed', async ({ page }) => {
  const id = await createDag({
    name: 'graph_weak_edit',
    tasks: [
      { name: 'extract', type: 'SHELL', command: 'echo extract' },
      { name: 'load', type: 'SHELL', command: 'echo load', dependsOn: ['extract'] },
    ],
  });
  await signIn(page, 'ADMIN', `/dags/${id}/edit`);
  const edge = page.locator('.react-flow__edge');
  await expect(edge).toHaveCount(1);
  await expect(edge).not.toHaveClass(/eedge-weak/);
  // A straight edge has no height to click: click between its two tasks.
  const from = (await page.locator('[data-testid="canvas-node"][data-task="extract"]').boundingBox())!;
  const to = (await page.locator('[data-testid="canvas-node"][data-task="load"]').boundingBox())!;
  await page.mouse.click((from.x + from.width + to.x) / 2, from.y + from.height / 2);
  await expect(page.getByTestId('edge-panel')).toContainText('load waits for extract');
  await page.getByTestId('edge-type-weak').check();
  await expect(edge).toHaveClass(/eedge-weak/);
  await shot(page, 'graph-editor-weak');
  await page.getByTestId('canvas-save').click();
  await expect(page.locator('.saved-note')).toBeVisible();

  const client = await api();
  const canvas = await (await client.get(`/api/v1/dags/${id}/canvas`)).json();
  await client.dispose();
  expect(canvas.edges).toEqual([{ source: 'extract', target: 'load', type: 'WEAK' }]);
  await page.reload();
  await expect(page.locator('.react-flow__edge')).toHaveClass(/eedge-weak/);

  await page.goto(page.url().replace(/\/edit$/, '?tab=graph'));
  await expect(page.getByTestId('graph-legend').locator('li')).toHaveText(['weak dependency (any result)']);
});

test('a failure path not taken is drawn apart from a disabled task, and the editor names its strategy', async ({ page }) => {
  const id = await dagId('example_recovery');
  const run = await triggerAndWait(id, 'did not succeed', (r) => r.status === 'SUCCESS');
  await signIn(page, 'ADMIN', `/runs/${run.id}`);
  const skipped = page.locator('[data-testid="graph-node"][data-task="drop_staging"]');
  await expect(skipped).toHaveAttribute('data-flow-skipped', 'true');
  await expect(skipped).toContainText('skipped (not needed)');
  await expect(page.locator('[data-testid="graph-node"][data-task="summary"]')).toHaveAttribute('data-status', 'SUCCESS');
  await shot(page, 'graph-failure-path-not-taken');
  await page.goto(`${base()}/dags/${id}/edit`);
  await expect(page.locator('[data-testid="canvas-node"][data-task="drop_staging"] [data-testid="node-strategy"]')).toHaveText('ONE_FAILED');
  await expect(page.locator('[data-testid="canvas-node"][data-task="summary"] [data-testid="node-strategy"]')).toHaveText('ALL_DONE');
});

test('a mapped task is drawn as a stack of its items and its items are listed under it', async ({ page }) => {
  const id = await dagId('example_map');
  const run = await triggerAndWait(id, 'did not succeed', (r) => r.status === 'SUCCESS');
  await signIn(page, 'ADMIN', `/runs/${run.id}`);
  const mapped = page.locator('[data-testid="graph-node"][data-task="load_table"]');
  await expect(mapped).toHaveAttribute('data-items', '7');
  await expect(mapped).toHaveAttribute('data-status', 'SUCCESS');
  await expect(mapped).toContainText('×7');
  await expect(mapped).toHaveAttribute('class', /gnode-stacked/);
  await expect(page.locator('[data-testid="graph-node"][data-task="report"]')).toHaveAttribute('data-status', 'SUCCESS');
  const items = page.locator('[data-testid="ti-row"][data-task="load_table"]');
  await expect(items).toHaveCount(7);
  await expect(items.nth(3).locator('a')).toHaveText('load_table[3]');
  await expect(items.nth(3).getByTestId('ti-map-item')).toHaveText('ods.payments');
  await shot(page, 'map-run-graph');

  // The grid folds the items into the map's cell, which opens them.
  await page.goto(`${base()}/dags/${id}?tab=grid`);
  const cell = page.locator(`[data-testid="grid-cell"][data-task="load_table"][data-run-id="${run.id}"]`);
  await expect(cell).toHaveAttribute('data-status', 'SUCCESS');
  await expect(cell).toHaveAttribute('data-items', '7');
  await expect(cell).toHaveAttribute('data-failed', '0');
  await expect(cell).toHaveAttribute('title', /7 items: open them$/);
  await cell.hover();
  await shot(page, 'map-grid');
  await cell.click();
  await expect(page).toHaveURL(new RegExp(`/runs/${run.id}#items-load_table$`));
  await expect(page.locator('#items-load_table')).toBeInViewport();
});

test('the editor maps a task over a parameter, the API holds it to a declared one, and a trigger picks the list', async ({ page }) => {
  await signIn(page, 'ADMIN', '/dags/new');
  await page.getByTestId('dag-name-input').fill('ui_map');
  await page.getByTestId('canvas-add-task').click();
  await page.getByTestId('task-name').fill('load_table');
  await page.getByTestId('task-command').fill('echo "loading $DJ_MAP_ITEM"');
  await page.getByTestId('task-map').check();
  await page.getByTestId('task-map-over').fill('${tables}');
  await page.getByTestId('task-map-max-parallel').fill('2');
  await expect(page.locator('[data-testid="canvas-node"][data-task="load_table"] [data-testid="node-map"]')).toBeVisible();
  await page.getByTestId('canvas-save').click();
  await expect(page.getByTestId('task-problems')).toContainText("map: over reads parameter 'tables', which neither the DAG's nor the task's params declare");
  await shot(page, 'editor-map-undeclared');
  await page.getByTestId('canvas-dag-settings').click();
  await page.getByTestId('dag-param-add').click();
  await page.getByTestId('dag-param-name').fill('tables');
  await page.getByTestId('dag-param-value').fill('["orders", "users", "payments"]');
  await page.getByTestId('canvas-save').click();
  await expect(page).toHaveURL(/\/dags\/\d+\?tab=graph/);
  const id = Number(new URL(page.url()).pathname.split('/')[2]);

  const client = await api();
  const canvas = await (await client.get(`/api/v1/dags/${id}/canvas`)).json();
  await client.dispose();
  expect(canvas.tasks[0].map).toEqual({ over: '${tables}', maxParallel: 2, maxItems: 1000 });

  await page.goto(`${base()}/dags/${id}/edit`);
  await page.locator('[data-testid="canvas-node"][data-task="load_table"]').click();
  await expect(page.getByTestId('task-map')).toBeChecked();
  await expect(page.getByTestId('task-map-over')).toHaveValue('${tables}');
  await expect(page.getByTestId('task-map-max-parallel')).toHaveValue('2');
  await shot(page, 'editor-map');

  await page.goto(`${base()}/dags/${id}?tab=graph`);
  await page.getByTestId('trigger-button').first().click();
  await page.getByTestId('trigger-param-tables').fill('["orders", "users"]');
  await page.getByTestId('trigger-submit').click();
  await expect(page).toHaveURL(/\/runs\/\d+/);
  const mapped = page.locator('[data-testid="graph-node"][data-task="load_table"]');
  await expect(mapped).toHaveAttribute('data-status', 'SUCCESS', { timeout: 30_000 });
  await expect(mapped).toHaveAttribute('data-items', '2');
  await expect(page.locator('[data-testid="ti-row"][data-task="load_table"] [data-testid="ti-map-item"]')).toHaveText(['orders', 'users']);
});

test('a SWITCH skips the load when there are no new rows, and the editor checks its cases as they are typed', async ({ page }) => {
  const id = await dagId('example_switch');
  const run = await triggerAndWait(id, 'did not succeed', (r) => r.status === 'SUCCESS');
  await signIn(page, 'ADMIN', `/runs/${run.id}`);
  for (const task of ['load', 'report']) {
    const skipped = page.locator(`[data-testid="graph-node"][data-task="${task}"]`);
    await expect(skipped).toHaveAttribute('data-flow-skipped', 'true');
  }
  for (const task of ['route', 'no_data_notice', 'summary']) {
    await expect(page.locator(`[data-testid="graph-node"][data-task="${task}"]`)).toHaveAttribute('data-status', 'SUCCESS');
  }
  await shot(page, 'switch-run-no-new-rows');

  await page.goto(`${base()}/dags/${id}/edit`);
  await page.locator('[data-testid="canvas-node"][data-task="route"]').click();
  const panel = page.getByTestId('switch-fields');
  await expect(panel.getByTestId('switch-when-1')).toHaveValue('int(tasks.count_new.output.rows) > 0');
  await expect(panel.getByTestId('switch-condition-ok')).toHaveText('valid; reads tasks.count_new.output.rows');
  await expect(panel.getByTestId('switch-then-1').getByLabel('load')).toBeChecked();
  await expect(panel.getByTestId('switch-default').getByLabel('no_data_notice')).toBeChecked();
  await expect(page.locator('.react-flow__edge-text', { hasText: /^case 1$/ })).toBeVisible();
  await expect(page.locator('.react-flow__edge-text', { hasText: /^default$/ })).toBeVisible();
  await shot(page, 'switch-editor-cases');

  // The example is file-managed; a DAG made over the API can be edited.
  const editable = await createDag({
    name: 'switch_edit',
    tasks: [
      { name: 'count', type: 'SHELL', command: 'echo "##dj-output rows=3"' },
      { name: 'route', type: 'SWITCH', dependsOn: ['count'], cases: [{ when: "tasks.count.status == 'SUCCESS'", then: ['load'] }], default: ['notice'] },
      { name: 'load', type: 'SHELL', command: 'echo load', dependsOn: ['route'] },
      { name: 'notice', type: 'SHELL', command: 'echo notice', dependsOn: ['route'] },
    ],
  });
  await page.goto(`${base()}/dags/${editable}/edit`);
  await page.locator('[data-testid="canvas-node"][data-task="route"]').click();
  await panel.getByTestId('switch-when-1').fill('int(tasks.count.output.rows) >');
  await expect(panel.getByTestId('switch-condition-error')).toContainText('does not parse at line 1, column 31');
  await panel.getByTestId('switch-when-1').fill('int(tasks.count.output.rows) > 2');
  await expect(panel.getByTestId('switch-condition-ok')).toHaveText('valid; reads tasks.count.output.rows');
  // Unticking the default leaves a child no branch runs: said before saving.
  await panel.getByTestId('switch-default').getByLabel('notice').uncheck();
  await expect(page.getByTestId('task-problems')).toContainText("'notice' depends on it but no case and not the default runs it");
  await panel.getByTestId('switch-default').getByLabel('notice').check();
  await page.getByTestId('canvas-save').click();
  await expect(page.locator('.saved-note')).toBeVisible();
  const client = await api();
  const saved = await (await client.get(`/api/v1/dags/${editable}`)).json();
  await client.dispose();
  const route = saved.tasks.find((t: { name: string }) => t.name === 'route');
  expect(route.cases).toEqual([{ when: 'int(tasks.count.output.rows) > 2', then: ['load'] }]);
  expect(route.default).toEqual(['notice']);
});
