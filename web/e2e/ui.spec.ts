// The web UI in a real browser against a real `datajump up` (global-setup.ts):
// what a data engineer does in the first hour, asserting what they would see.
// Every page visited leaves a screenshot in test-results/screenshots/.

import { type Page, expect, test } from '@playwright/test';
import { api, base, createDag, shot, signIn, startAndWaitRunning, token } from './support';

/** A React Flow node's position on the canvas (flow coordinates, not the screen's). */
async function flowPosition(page: Page, task: string) {
  return page
    .locator(`.react-flow__node:has([data-testid="canvas-node"][data-task="${task}"])`)
    .evaluate((node) => {
      const matrix = new DOMMatrixReadOnly(getComputedStyle(node).transform);
      return { x: matrix.m41, y: matrix.m42 };
    });
}

test('signs in with a token kept only in an HttpOnly cookie and lists the example DAGs', async ({ page, context }) => {
  await page.goto(`${base()}/dags`);
  await expect(page).toHaveURL(/\/signin/);
  await signIn(page, 'ADMIN');
  for (const name of ['example_diamond', 'example_retries', 'example_sql', 'example_weekday']) {
    await expect(page.locator(`[data-testid="dag-row"][data-dag-name="${name}"]`)).toBeVisible();
  }
  await expect(page.getByTestId('trigger-button').first()).toBeVisible();
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.httpOnly);
  expect(session, JSON.stringify(cookies)).toBeTruthy();
  expect(session?.sameSite).toBe('Strict');
  expect(page.url()).not.toContain(token('ADMIN'));
  expect(await page.evaluate(() => document.cookie)).not.toContain(session?.value ?? '-');
  await shot(page, '01-dags');
});

test('a viewer is offered no button it may not use', async ({ page }) => {
  await signIn(page, 'VIEWER');
  const row = page.locator('[data-testid="dag-row"][data-dag-name="example_diamond"]');
  await expect(row).toBeVisible();
  await expect(page.getByTestId('trigger-button')).toHaveCount(0);
  await expect(page.getByTestId('online-toggle')).toHaveCount(0);
  await row.getByRole('link', { name: 'example_diamond' }).click();
  await page.getByTestId('tab-graph').click();
  await expect(page.getByTestId('graph-node')).toHaveCount(4);
  await expect(page.getByTestId('trigger-button')).toHaveCount(0);
  await shot(page, '02-dag-as-viewer');
});

test('a DAG drawn on the canvas is saved with its positions and parameters, runs, and its graph turns green live', async ({ page }) => {
  await signIn(page, 'ADMIN', '/dags/new');
  await page.getByTestId('dag-name-input').fill('ui_canvas');
  await page.getByTestId('dag-param-add').click();
  await page.getByTestId('dag-param-name').fill('greeting');
  await page.getByTestId('dag-param-value').fill('hello');
  await page.getByTestId('dag-priority').selectOption('8');
  const tasks = [
    { name: 'extract', command: 'echo extracting; sleep 1' },
    { name: 'transform', command: 'echo transforming' },
    { name: 'load', command: 'echo loading' },
  ];
  for (const task of tasks) {
    await page.getByTestId('canvas-add-task').click();
    await page.getByTestId('task-name').fill(task.name);
    await page.getByTestId('task-command').first().fill(task.command);
  }
  // Drag each node to a place of its own, then draw extract → transform → load.
  for (const [i, task] of tasks.entries()) {
    const node = page.locator(`[data-testid="canvas-node"][data-task="${task.name}"]`);
    const box = await node.boundingBox();
    if (!box) throw new Error(`${task.name} is not drawn`);
    const pane = await page.locator('.react-flow').boundingBox();
    if (!pane) throw new Error('no canvas');
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(pane.x + 120 + i * 260, pane.y + 150 + (i % 2) * 90, { steps: 8 });
    await page.mouse.up();
  }
  const connect = async (from: string, to: string) => {
    const source = page.locator(`.react-flow__node:has([data-task="${from}"]) .react-flow__handle-right`);
    const target = page.locator(`.react-flow__node:has([data-task="${to}"]) .react-flow__handle-left`);
    await source.dragTo(target);
  };
  await connect('extract', 'transform');
  await connect('transform', 'load');
  await expect(page.locator('.react-flow__edge')).toHaveCount(2);
  const dropped = Object.fromEntries(
    await Promise.all(tasks.map(async (t) => [t.name, await flowPosition(page, t.name)] as const)),
  );
  await shot(page, '03-canvas-editor');
  await page.getByTestId('canvas-save').click();
  await expect(page).toHaveURL(/\/dags\/\d+\?tab=graph/);
  const dagId = Number(new URL(page.url()).pathname.split('/')[2]);

  await page.goto(`${base()}/dags/${dagId}/edit`);
  for (const task of tasks) {
    const at = await flowPosition(page, task.name);
    expect(Math.abs(at.x - dropped[task.name].x), task.name).toBeLessThan(2);
    expect(Math.abs(at.y - dropped[task.name].y), task.name).toBeLessThan(2);
  }
  await expect(page.locator('.react-flow__edge')).toHaveCount(2);
  await expect(page.getByTestId('dag-param-name')).toHaveValue('greeting');
  await expect(page.getByTestId('dag-param-value')).toHaveValue('hello');
  await expect(page.getByTestId('dag-priority')).toHaveValue('8');
  await shot(page, '03-dag-settings');

  await page.goto(`${base()}/dags/${dagId}?tab=graph`);
  await expect(page.getByText(/priority 8$/)).toBeVisible();
  await page.getByTestId('trigger-button').first().click();
  await expect(page.getByTestId('trigger-param-greeting')).toHaveValue('hello');
  await page.getByTestId('trigger-submit').click();
  await expect(page).toHaveURL(/\/runs\/\d+/);
  await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
  for (const task of tasks) {
    await expect(page.locator(`[data-testid="graph-node"][data-task="${task.name}"]`)).toHaveAttribute(
      'data-status',
      'SUCCESS',
      { timeout: 30_000 },
    );
  }
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-status', 'SUCCESS');
  await expect(page.getByTestId('gantt-bar')).toHaveCount(3);
  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  await shot(page, '04-run');

  await page.goto(`${base()}/dags/${dagId}?tab=grid`);
  await expect(page.locator('[data-testid="grid-cell"][data-status="SUCCESS"]')).toHaveCount(3);
  await shot(page, '05-dag-grid');
});

test('a running task log shows its lines as they are written', async ({ page }) => {
  const dagId = await createDag({
    name: 'ui_chatty',
    tasks: [{ name: 'talk', type: 'SHELL', command: 'for i in $(seq 1 40); do echo "tick $i"; sleep 0.4; done' }],
  });
  const { taskInstanceId } = await startAndWaitRunning(dagId);
  await signIn(page, 'OPERATOR', `/task-instances/${taskInstanceId}`);
  const view = page.getByTestId('log-view');
  await expect(view).toContainText('tick 2', { timeout: 20_000 });
  await expect(view).toContainText('tick 12', { timeout: 20_000 });
  await shot(page, '06-task-log-live');
  await expect(page.getByTestId('ti-status')).toHaveAttribute('data-status', 'SUCCESS', { timeout: 40_000 });
  await expect(view).toContainText('tick 40');
});

test('an operator kills a running task from its page', async ({ page }) => {
  const dagId = await createDag({
    name: 'ui_sleepy',
    tasks: [{ name: 'nap', type: 'SHELL', command: 'echo dozing; sleep 300' }],
  });
  const { taskInstanceId } = await startAndWaitRunning(dagId);
  await signIn(page, 'OPERATOR', `/task-instances/${taskInstanceId}`);
  await expect(page.getByTestId('ti-status')).toHaveAttribute('data-status', 'RUNNING');
  await page.getByTestId('kill-task').click();
  await page.getByTestId('confirm-button').click();
  await expect(page.getByTestId('ti-status')).toHaveAttribute('data-status', 'KILLED', { timeout: 20_000 });
  await expect(page.getByTestId('kill-task')).toHaveCount(0);
  await shot(page, '07-task-killed');
});

test('a backfill of three dates says what will run, then shows three runs', async ({ page }) => {
  const dagId = await createDag({
    name: 'ui_backfill',
    schedules: [{ cron: '0 0 2 * * ?' }],
    tasks: [{ name: 'daily', type: 'SHELL', command: 'echo "$DJ_BIZ_DATE"' }],
  });
  await signIn(page, 'OPERATOR', `/dags/${dagId}/backfill`);
  await page.getByTestId('backfill-from').fill('2026-11-01');
  await page.getByTestId('backfill-to').fill('2026-11-03');
  await page.getByTestId('backfill-parallel').fill('3');
  await expect(page.getByTestId('backfill-preview')).toContainText('3', { timeout: 10_000 });
  await shot(page, '08-backfill');
  await page.getByTestId('backfill-submit').click();
  // The answer first, as a user reads it: leaving the page before it
  // arrives would abort the request and start nothing.
  await expect(page.getByTestId('backfill-result')).toContainText('Backfill started', { timeout: 10_000 });
  await page.getByRole('link', { name: /Watch them in the grid/ }).click();
  await expect(page).toHaveURL(new RegExp(`/dags/${dagId}\\?tab=grid`));
  await expect(page.locator('[data-testid="grid-run"][data-status="SUCCESS"]')).toHaveCount(3, { timeout: 30_000 });
  await shot(page, '09-backfill-grid');
});

test('every page draws for an admin', async ({ page }) => {
  await signIn(page, 'ADMIN');
  const client = await api();
  const dag = await (await client.get('/api/v1/dags/by-name/example_diamond')).json();
  await client.dispose();
  const pages: [string, string][] = [
    [`/dags/${dag.id}?tab=graph`, '10-dag-graph'],
    [`/dags/${dag.id}?tab=runs`, '11-dag-runs'],
    [`/dags/${dag.id}?tab=schedules`, '12-dag-schedules'],
    [`/dags/${dag.id}?tab=definition`, '13-dag-definition'],
    [`/dags/${dag.id}/trigger`, '14-trigger'],
    ['/runners', '15-runners'],
    ['/alerts', '16-alerts'],
    ['/audit', '17-audit'],
    ['/datasets', '18-datasets'],
  ];
  for (const [path, name] of pages) {
    await page.goto(`${base()}${path}`);
    await expect(page.locator('main')).toBeVisible();
    await expect(page.locator('.banner-error')).toHaveCount(0);
    if (path === '/runners') {
      await expect(page.getByTestId('runner-row')).toHaveCount(1);
      const served = page.locator('[data-testid="queue-row"][data-queue="default"]');
      await expect(served).toContainText('1 runner');
    }
    await shot(page, name);
  }
});

test('the warehouse example shows its lineage, and an operator announces a partition', async ({ page }) => {
  const client = await api();
  const ods = await (await client.get('/api/v1/dags/by-name/example_ods')).json();
  const started = await client.post(`/api/v1/dags/${ods.id}/trigger`, { data: {} });
  expect(started.status(), await started.text()).toBe(202);
  const { runKey } = await started.json();
  // Its users wait for the CRM's export: announce it for the run's date.
  const deadline = Date.now() + 60_000;
  let bizDate = '';
  let sensorId = 0;
  for (;;) {
    const answer = await client.get(`/api/v1/dags/instances/by-key/${encodeURIComponent(runKey)}`);
    if (answer.ok()) {
      const run = await answer.json();
      const sensor = run.taskInstances.find((t: { taskName: string }) => t.taskName === 'wait_for_crm_export');
      if (sensor?.status === 'UP_FOR_RESCHEDULE') {
        bizDate = run.bizDate;
        sensorId = sensor.id;
        break;
      }
    }
    if (Date.now() > deadline) throw new Error('the sensor never waited');
    await new Promise((r) => setTimeout(r, 200));
  }
  // Waiting, the sensor says how often it has looked and when it looks again.
  await signIn(page, 'OPERATOR', `/task-instances/${sensorId}`);
  await expect(page.getByTestId('ti-status')).toHaveAttribute('data-status', 'UP_FOR_RESCHEDULE');
  await expect(page.getByTestId('ti-checks')).toHaveText(/^[1-9]\d*$/);
  await expect(page.getByTestId('ti-next-check')).toContainText(/\d\d:\d\d:\d\d/);
  await shot(page, '21-sensor-waiting');
  const announced = await client.post('/api/v1/datasets/ext.crm_users/events', { data: { partition: bizDate } });
  expect(announced.status(), await announced.text()).toBe(201);
  for (;;) {
    const dws = await (await client.get('/api/v1/datasets/dws.daily_sales')).json();
    if (dws.events > 0) break;
    if (Date.now() > deadline + 60_000) throw new Error('the warehouse never reached DWS');
    await new Promise((r) => setTimeout(r, 300));
  }
  await client.dispose();

  await page.goto(`${base()}/datasets`);
  for (const name of ['ods.orders', 'ods.users', 'dwd.orders', 'dws.daily_sales', 'ext.crm_users']) {
    await expect(page.getByTestId(`dataset-${name}`)).toBeVisible();
  }
  await expect(page.getByTestId('dataset-dwd.orders')).toContainText('example_dwd');
  await expect(page.getByTestId('dataset-dwd.orders')).toContainText('example_dws');
  await shot(page, '19-datasets');
  await page.getByRole('link', { name: 'dwd.orders' }).click();
  await expect(page.getByTestId('lineage-producer')).toContainText('example_dwd / clean_orders');
  await expect(page.getByTestId('lineage-consumer')).toContainText('example_dws');
  await expect(page.getByTestId('dataset-events')).toContainText(bizDate);
  await page.getByTestId('announce-partition').fill('2026-01-01');
  await page.getByTestId('announce-metadata').fill('{"rows": 1200}');
  await page.getByRole('button', { name: 'Announce' }).click();
  await expect(page.getByTestId('announce-result')).toContainText('2026-01-01');
  await expect(page.getByTestId('dataset-events')).toContainText('{"rows":1200}');
  await shot(page, '20-dataset-lineage');
});

test('a sensor and the dataset it waits for are drawn on the canvas and saved as a definition', async ({ page }) => {
  await signIn(page, 'ADMIN', '/dags/new');
  await page.getByTestId('dag-name-input').fill('ui_sensor');
  await page.getByTestId('canvas-add-task').click();
  await page.getByTestId('task-name').fill('wait_for_landing');
  await page.getByTestId('task-type').selectOption('SENSOR');
  await page.getByTestId('sensor-check').selectOption('file');
  await page.getByTestId('task-command').fill('/landing/${bizdate}/*.csv');
  await page.getByLabel('Check every (s)').fill('30');
  await page.getByLabel('end SKIPPED, not TIMEOUT, when it gives up').check();
  await page.getByTestId('canvas-add-task').click();
  await page.getByTestId('task-name').fill('load');
  await page.getByTestId('task-command').fill('echo loading');
  await page.getByTestId('task-outputs').fill('ods.landing/${bizdate}');
  // A sensor with nothing to check is caught before saving.
  await page.getByTestId('canvas-add-task').click();
  await page.getByTestId('task-name').fill('unfinished');
  await page.getByTestId('task-type').selectOption('SENSOR');
  await page.getByTestId('sensor-check').selectOption('dag');
  await page.getByTestId('canvas-save').click();
  await expect(page.getByTestId('task-problems')).toContainText('the sensor needs a dag and a task');
  await shot(page, '22-canvas-sensor');
  await page.getByTestId('task-delete').click();
  await page.getByTestId('canvas-save').click();
  await expect(page).toHaveURL(/\/dags\/\d+\?tab=graph/);
  const dagId = Number(new URL(page.url()).pathname.split('/')[2]);

  const client = await api();
  const canvas = await (await client.get(`/api/v1/dags/${dagId}/canvas`)).json();
  await client.dispose();
  const byName = Object.fromEntries(canvas.tasks.map((t: { name: string }) => [t.name, t]));
  expect(Object.keys(byName).sort()).toEqual(['load', 'wait_for_landing']);
  expect(byName.wait_for_landing.type).toBe('SENSOR');
  expect(byName.wait_for_landing.content).toMatchObject({ file: '/landing/${bizdate}/*.csv', poke_interval: 30, soft_fail: true });
  expect(byName.load.outputs).toEqual(['ods.landing/${bizdate}']);
});
