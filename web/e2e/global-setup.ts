// Starts a real DataJump for the browser tests: its own nats-server on a free
// port with a temporary store, a fresh SQLite database, an admin and a viewer
// token, and `datajump up` with the repository's example DAGs — the system a
// user gets from the README, with tokens. Tests read where it is and the
// tokens from process.env (DATAJUMP_UI_URL, DJ_ADMIN_TOKEN, DJ_VIEWER_TOKEN,
// DJ_OPERATOR_TOKEN); the returned function stops everything.
//
// The binary is DATAJUMP_BIN (scripts/test.sh passes the one it built), or
// ../target/debug/datajump; nats-server is DATAJUMP_TEST_NATS_SERVER, or
// Debian's /usr/sbin/nats-server, or the one on PATH.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..', '..');

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

function natsServer(): string {
  const given = process.env.DATAJUMP_TEST_NATS_SERVER;
  if (given) return given;
  if (existsSync('/usr/sbin/nats-server')) return '/usr/sbin/nats-server';
  return 'nats-server';
}

async function waitFor(url: string, seconds: number, what: string, log: string) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      const answer = await fetch(url);
      if (answer.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      throw new Error(`${what} did not answer ${url} within ${seconds} s; see ${log}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export default async function globalSetup() {
  const binary = process.env.DATAJUMP_BIN ?? join(repo, 'target', 'debug', 'datajump');
  if (!existsSync(binary)) {
    throw new Error(`no datajump binary at ${binary}: build it (cargo build -p datajump) or set DATAJUMP_BIN`);
  }
  const work = mkdtempSync(join(tmpdir(), 'datajump-ui-e2e-'));
  const logs = join(import.meta.dirname, '..', 'test-results');
  mkdirSync(logs, { recursive: true });
  const natsPort = await freePort();
  const apiPort = await freePort();
  const children: ChildProcess[] = [];

  const natsLog = join(logs, 'nats-server.log');
  children.push(
    spawn(natsServer(), ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', join(work, 'nats')], {
      stdio: ['ignore', openSync(natsLog, 'w'), openSync(natsLog, 'a')],
    }),
  );

  // The token of whoever runs the tests must not reach the system under test.
  const inherited = Object.entries(process.env).filter(([name]) => name !== 'DATAJUMP_API_TOKEN');
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(inherited),
    DATAJUMP_DATA_DIR: join(work, 'data'),
    DATAJUMP_DATABASE_URL: `sqlite://${join(work, 'datajump.db')}?mode=rwc`,
    DATAJUMP_NATS_URL: `nats://127.0.0.1:${natsPort}`,
    DATAJUMP_API_URL: `http://127.0.0.1:${apiPort}`,
    DATAJUMP_LOG: 'info',
  };
  const datajump = (...args: string[]) =>
    execFileSync(binary, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  datajump('migrate');
  const token = (name: string, role: string) => datajump('token', 'create', name, '--role', role);
  process.env.DJ_ADMIN_TOKEN = token('ui-admin', 'admin');
  process.env.DJ_OPERATOR_TOKEN = token('ui-operator', 'operator');
  process.env.DJ_VIEWER_TOKEN = token('ui-viewer', 'viewer');

  const upLog = join(logs, 'datajump-up.log');
  children.push(
    spawn(binary, ['up', '--dags', join(repo, 'dags'), '--api-addr', `127.0.0.1:${apiPort}`], {
      env,
      stdio: ['ignore', openSync(upLog, 'w'), openSync(upLog, 'a')],
    }),
  );
  const base = `http://127.0.0.1:${apiPort}`;
  await waitFor(`${base}/readyz`, 60, 'datajump up', upLog);
  process.env.DATAJUMP_UI_URL = base;

  return async () => {
    for (const child of children.reverse()) {
      child.kill('SIGTERM');
      await new Promise((r) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          r(undefined);
        }, 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          r(undefined);
        });
      });
    }
    rmSync(work, { recursive: true, force: true });
  };
}
