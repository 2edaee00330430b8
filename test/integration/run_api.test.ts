/**
 * run(): a supervisor started from an app's code, with the app's tasks given
 * as a map of kind → module. The tasks live in a temporary folder outside the
 * repository and import a module beside them, as an app's tasks import the
 * app's code. The app has tsx among its dependencies (a link to the
 * checkout's), as an app with .ts tasks on Node.js 20 needs: the threads load
 * it for the .ts task (this test process runs compiled on plain node,
 * test/helpers/test_mirror.ts, so its threads have no tsx of their own; it
 * must not fall back to tsx), and the folder is CommonJS to it (no
 * package.json), as a NestJS app's is. Real PostgreSQL, real worker threads.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { ConfigError, enqueue, enqueueMany, run, TaskSetupError, type Runner } from '../../src/index.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { ROOT } from '../helpers/packed.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let app: string;
const quiet = { log: { level: 'silent' as const } };

before(async () => {
  db = await createTestDatabase('run_api');
  app = mkdtempSync(path.join(tmpdir(), 'jobvisor-app-'));
  mkdirSync(path.join(app, 'lib'));
  mkdirSync(path.join(app, 'tasks'));
  mkdirSync(path.join(app, 'node_modules'));
  symlinkSync(path.join(ROOT, 'node_modules/tsx'), path.join(app, 'node_modules/tsx'));
  writeFileSync(path.join(app, 'lib/format.mjs'), 'export const greeting = (name) => `hello ${name}`;\n');
  writeFileSync(path.join(app, 'lib/format.cjs'), 'exports.shout = (s) => s.toUpperCase();\n');
  writeFileSync(
    path.join(app, 'lib/total.ts'),
    'export const total = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);\n',
  );
  writeFileSync(
    path.join(app, 'tasks/greet.mjs'),
    "import { greeting } from '../lib/format.mjs';\nexport default async (p) => ({ text: greeting(p.name) });\n",
  );
  writeFileSync(
    path.join(app, 'tasks/shout.cjs'),
    "const { shout } = require('../lib/format.cjs');\nmodule.exports = async (p) => ({ text: shout(p.text) });\n",
  );
  writeFileSync(
    path.join(app, 'tasks/sum.ts'),
    "import { total } from '../lib/total.ts';\nexport const options = { queue: 'math' };\nexport default async (p: { xs: number[] }) => ({ sum: total(p.xs) });\n",
  );
  writeFileSync(path.join(app, 'tasks/broken.mjs'), "throw new Error('no SMTP_HOST set');\n");
});

after(async () => {
  await db.drop();
  rmSync(app, { recursive: true, force: true });
});

/**
 * The runner's completed jobs and retries, gathered from now on: call it before
 * enqueueing, since a job can complete before its enqueue's promise comes back
 * (on a loaded machine one did, as enqueuedThen in helpers/inprocess.ts says).
 * The returned wait fails when a job was retried or after 20 s.
 */
function completions(runner: Runner): (ids: string[]) => Promise<void> {
  const done = new Set<string>();
  const failed: string[] = [];
  runner.events.on('job:completed', ({ jobs }) => jobs.forEach((j) => done.add(j.id)));
  runner.events.on('job:retried', ({ errors }) => failed.push(...errors));
  return async (ids) => {
    await until(
      'every job completed',
      () => ({ left: ids.filter((id) => !done.has(id)), failed }),
      (s) => s.left.length === 0 || s.failed.length > 0,
      20_000,
    );
    assert.deepEqual(failed, [], 'a job failed');
  };
}

describe('run()', () => {
  it("runs the app's tasks from a map (.mjs, .cjs, .ts importing their neighbours) and drains on stop()", async () => {
    const signalsBefore = process.listenerCount('SIGTERM');
    const runner = await run({
      pool: db.pool,
      connectionString: db.url,
      tasks: {
        greet: path.join(app, 'tasks/greet.mjs'),
        shout: pathToFileURL(path.join(app, 'tasks/shout.cjs')),
        sum: pathToFileURL(path.join(app, 'tasks/sum.ts')).href,
      },
      queues: { default: { concurrency: 4 }, math: { concurrency: 2 } },
      threads: { maxThreads: 2 },
      ...quiet,
    });
    assert.match(runner.id, /:\d+:[0-9a-f]{6}$/);
    assert.equal(runner.metricsPort, undefined, 'no metrics server unless asked');
    assert.equal(process.listenerCount('SIGTERM'), signalsBefore, 'no signal handler unless asked');
    const completed = completions(runner);
    // A job's queue is what its enqueue says, never what a task read in this process declares.
    const ids = [
      (await enqueue(db.pool, 'greet', { name: 'ada' })).id,
      (await enqueue(db.pool, 'shout', { text: 'hi' })).id,
      (await enqueue(db.pool, 'sum', { xs: [1, 2, 3] }, { queue: 'math' })).id,
    ];
    await completed(ids);
    const rows = await db.pool.query<{ kind: string; queue: string; result: unknown }>(
      'SELECT kind, queue, result FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) ORDER BY id',
      [ids],
    );
    assert.deepEqual(rows.rows, [
      { kind: 'greet', queue: 'default', result: { text: 'hello ada' } },
      { kind: 'shout', queue: 'default', result: { text: 'HI' } },
      { kind: 'sum', queue: 'math', result: { sum: 6 } },
    ]);
    let stoppedEvent = false;
    runner.events.on('supervisor:stopped', () => (stoppedEvent = true));
    await Promise.all([runner.stop(), runner.stop()]);
    await runner.stopped;
    assert.ok(stoppedEvent);
    // The app's pool is the app's: still open.
    assert.equal((await db.pool.query('SELECT 1 AS one')).rows[0].one, 1);
  });

  it("works from an app's pg.Pool alone, configured by parts, and leaves it open", async () => {
    const u = new URL(db.url);
    const pool = new pg.Pool({
      host: u.hostname,
      port: Number(u.port),
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      database: u.pathname.slice(1),
      max: 3,
    });
    try {
      const runner = await run({ pool, tasks: { greet: path.join(app, 'tasks/greet.mjs') }, ...quiet });
      const completed = completions(runner);
      const { id } = await enqueue(pool, 'greet', { name: 'bo' });
      await completed([id]);
      await runner.stop();
      const row = await pool.query('SELECT result FROM jobvisor.jobs WHERE id = $1', [id]);
      assert.deepEqual(row.rows[0].result, { text: 'hello bo' });
    } finally {
      await pool.end();
    }
  });

  it("honours a mapped task's exclusiveThread: it never shares its thread; the others still do", async () => {
    await db.pool.query(
      'CREATE TABLE spans (job_id bigint, kind text, thread_id int, started float8, finished float8)',
    );
    const runner = await run({
      connectionString: db.url,
      // Other kind names than the files': the options follow the map, not the folder.
      tasks: { solo: path.join(FIXTURE_TASKS, 'exclusive_span.js'), pair: path.join(FIXTURE_TASKS, 'shared_span.js') },
      queues: { default: { concurrency: 12, jobsPerThread: 6 } },
      threads: { maxThreads: 2 },
      ...quiet,
    });
    try {
      const completed = completions(runner);
      const jobs = Array.from({ length: 12 }, (_, i) => ({ kind: i % 3 ? 'pair' : 'solo', payload: { ms: 250 } }));
      const ids = (await enqueueMany(db.pool, jobs)).map((r) => r.id);
      await completed(ids);
    } finally {
      await runner.stop();
    }
    type Span = { kind: string; thread_id: number; started: number; finished: number };
    const spans = (await db.pool.query<Span>('SELECT * FROM spans')).rows;
    assert.equal(spans.length, 12);
    let shared = 0;
    for (const a of spans)
      for (const b of spans) {
        if (a === b || a.thread_id !== b.thread_id || !(a.started < b.finished && b.started < a.finished)) continue;
        assert.ok(a.kind === 'pair' && b.kind === 'pair', `${a.kind} and ${b.kind} ran at once on one thread`);
        shared++;
      }
    assert.ok(shared > 0, 'tasks without the option still share a thread');
  });

  it('serves /metrics, /healthz and /readyz when asked', async () => {
    const runner = await run({ connectionString: db.url, metrics: { port: 0, host: '127.0.0.1' }, ...quiet });
    try {
      assert.ok(runner.metricsPort && runner.metricsPort > 0);
      const base = `http://127.0.0.1:${runner.metricsPort}`;
      assert.match(await (await fetch(`${base}/metrics`)).text(), /jobvisor_supervisor_info\{/);
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
    } finally {
      await runner.stop();
    }
  });

  it('drains on SIGTERM only with handleSignals: true, and removes its handlers when stopped', async () => {
    const before = process.listenerCount('SIGTERM');
    const runner = await run({ connectionString: db.url, handleSignals: true, ...quiet });
    assert.equal(process.listenerCount('SIGTERM'), before + 1);
    await runner.stop();
    assert.equal(process.listenerCount('SIGTERM'), before);
  });

  it('refuses an unknown or mistyped option with ConfigError naming it and the nearest key', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ queus: { default: {} } }, /unknown run\(\) option "queus" \(did you mean "queues"\?\)/],
      [{ shutdown: { grase: '5s' } }, /unknown key "shutdown.grase" \(did you mean "shutdown.grace"\?\)/],
      [{ conectionString: db.url }, /did you mean "connectionString"/],
      [{ jobs: { lease: 'soon' } }, /jobs.lease/],
      [{ queues: { default: { concurency: 2 } } }, /did you mean "queues.default.concurrency"/],
      [{ database: db.url }, /run\(\) takes the database as connectionString or pool, not database$/],
      [{ database: { url: db.url } }, /run\(\) takes the database as connectionString or pool, not database\.url$/],
    ];
    for (const [options, message] of cases) {
      await assert.rejects(
        run({ connectionString: db.url, ...quiet, ...options }),
        (err: unknown) => err instanceof ConfigError && err.code === 'CONFIG_INVALID' && message.test(err.message),
      );
    }
  });

  it('stops start-up with one line naming a task that cannot run, leaving nothing running', async () => {
    const cases: [Parameters<typeof run>[0], string, RegExp][] = [
      [{ tasksDir: path.join(app, 'nowhere') }, 'TASKS_DIR_MISSING', /tasks folder .*nowhere .*does not exist/],
      [
        { tasks: { gone: path.join(app, 'tasks/gone.mjs') } },
        'TASK_FILE_MISSING',
        /task gone is mapped to .*gone\.mjs/,
      ],
      [{ tasks: { broken: path.join(app, 'tasks/broken.mjs') } }, 'TASK_IMPORT_FAILED', /"broken".*no SMTP_HOST set/],
      [{ tasksDir: path.join(app, 'tasks') }, 'TASK_IMPORT_FAILED', /"broken".*no SMTP_HOST set/],
    ];
    const listeners = process.listenerCount('SIGTERM');
    for (const [options, code, message] of cases) {
      await assert.rejects(
        run({ connectionString: db.url, handleSignals: true, ...quiet, ...options }),
        (err: unknown) =>
          err instanceof TaskSetupError &&
          err.code === code &&
          message.test(err.message) &&
          !err.message.includes('\n'),
      );
    }
    // Nothing claimed: the database's connections are checked by db.drop() in after().
    assert.equal(process.listenerCount('SIGTERM'), listeners, 'no signal handler left behind');
  });
});
