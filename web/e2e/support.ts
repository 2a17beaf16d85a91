// What the browser tests share: where the system under test is, its
// tokens, signing in, the API as a script uses it, and screenshots.

import { type APIRequestContext, type Page, expect, request } from '@playwright/test';

export const base = () => {
  const url = process.env.DATAJUMP_UI_URL;
  if (!url) throw new Error('DATAJUMP_UI_URL is not set: e2e/global-setup.ts did not run');
  return url;
};
export const token = (role: 'ADMIN' | 'OPERATOR' | 'VIEWER') => {
  const value = process.env[`DJ_${role}_TOKEN`];
  if (!value) throw new Error(`DJ_${role}_TOKEN is not set`);
  return value;
};

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: `test-results/screenshots/${name}.png`, fullPage: false });
}

export async function signIn(page: Page, role: 'ADMIN' | 'OPERATOR' | 'VIEWER', next = '/dags') {
  await page.goto(`${base()}/signin?next=${encodeURIComponent(next)}`);
  await page.getByTestId('signin-token').fill(token(role));
  await page.getByTestId('signin-submit').click();
  await expect(page.getByTestId('whoami')).toContainText(`ui-${role.toLowerCase()}`);
}

/** The API as a script would use it, with the admin's bearer token. */
export async function api(): Promise<APIRequestContext> {
  return request.newContext({
    baseURL: base(),
    extraHTTPHeaders: { Authorization: `Bearer ${token('ADMIN')}` },
  });
}

export async function createDag(dag: object): Promise<number> {
  const client = await api();
  const answer = await client.post('/api/v1/dags', { data: dag });
  expect(answer.status(), await answer.text()).toBe(201);
  const id = (await answer.json()).id as number;
  await client.dispose();
  return id;
}

/** A run as `GET /api/v1/dags/instances/by-key/{key}` answers it. */
export type RunAnswer = {
  id: number;
  status: string;
  bizDate: string;
  startTime: string | null;
  taskInstances: { id: number; status: string; taskName: string }[];
};

/**
 * Triggers `dagId` through the API and polls its run until `ready` says
 * so (30 s at most, `what` naming the wait in the error); returns the run.
 */
export async function triggerAndWait(dagId: number, what: string, ready: (run: RunAnswer) => boolean): Promise<RunAnswer> {
  const client = await api();
  const started = await client.post(`/api/v1/dags/${dagId}/trigger`, { data: {} });
  expect(started.status(), await started.text()).toBe(202);
  const { runKey } = await started.json();
  const deadline = Date.now() + 30_000;
  try {
    for (;;) {
      const answer = await client.get(`/api/v1/dags/instances/by-key/${encodeURIComponent(runKey)}`);
      if (answer.ok()) {
        const run: RunAnswer = await answer.json();
        if (ready(run)) return run;
      }
      if (Date.now() > deadline) throw new Error(`run ${runKey} ${what} within 30 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await client.dispose();
  }
}

/** Triggers `dagId` through the API and waits until its first task instance runs. */
export async function startAndWaitRunning(dagId: number): Promise<{ runId: number; taskInstanceId: number }> {
  const running = (run: RunAnswer) => run.taskInstances.find((t) => t.status === 'RUNNING');
  const run = await triggerAndWait(dagId, 'never had a running task', (r) => running(r) !== undefined);
  return { runId: run.id, taskInstanceId: running(run)?.id ?? 0 };
}
