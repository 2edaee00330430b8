/**
 * Nothing jobvisor sets outlives its own transaction on a pooled connection:
 * a real PgBouncer 1.18 in transaction mode with ONE server connection
 * (`default_pool_size` 1), so every client's transactions, jobvisor's and an
 * application's, run on the same backend; `database.directUrl` unset. After
 * each kind of jobvisor statement, an application connection through the same
 * PgBouncer reads its settings (`current_setting`) and must see what it saw
 * before jobvisor ran anything.
 *
 * Before, jobvisor's session-level settings stayed on that backend:
 * statement_timeout 30 s (its pool), 2 s (the readiness probe), 5 s (the
 * dashboard), idle_in_transaction_session_timeout (ctx.db), and the dashboard's
 * planner switches (enable_seqscan, enable_sort, enable_bitmapscan, jit off).
 * The bounds that must hold through the pooler still do (SET LOCAL): the
 * dashboard answers 503 on a locked table within its 5 s, and a timed-out job's
 * ctx.db statement is cancelled through PgBouncer's own cancel keys.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createPool } from '../../src/db/pool.ts';
import { DatabaseProbe } from '../../src/metrics/readiness.ts';
import { claimJobs } from '../../src/queue/claim.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { reapExpiredLeases } from '../../src/queue/reaper.ts';
import { createTaskPool } from '../../src/worker/task_db.ts';
import { report, until } from '../helpers/chaos/measure.ts';
import { startPgBouncer, type PgBouncer } from '../helpers/chaos/pgbouncer.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { serveTestDashboard, TEST_TOKEN } from '../helpers/dashboard.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';
import { PGBOUNCER, skipUnless } from '../helpers/tools.ts';

const DB = 'chaos_pgbouncer_settings';
const SETTINGS = [
  'statement_timeout',
  'idle_in_transaction_session_timeout',
  'client_connection_check_interval',
  'enable_seqscan',
  'enable_sort',
  'enable_bitmapscan',
  'jit',
  'lock_timeout',
  'synchronous_commit',
  'application_name',
];

let server: ChaosPostgres;
let url: string;
let bouncer: PgBouncer;
let pooled: string;
/** The application: its own connections through the same PgBouncer. */
let app: pg.Pool;
let baseline: Record<string, string>;
const supervisors: SpawnedSupervisor[] = [];
const seen: Record<string, Record<string, string>> = {};

before(async () => {
  if (skipUnless(PGBOUNCER)) return;
  server = await startChaosPostgres({});
  url = await createMigratedDatabase(server, DB);
  bouncer = await startPgBouncer(server, DB, 'transaction', { poolSize: 1 });
  pooled = bouncer.urlFor(url);
  app = new pg.Pool({ connectionString: pooled, max: 2, application_name: 'the-app' });
  app.on('error', () => {});
  baseline = await appSees();
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop('SIGKILL')));
  await app?.end().catch(() => {});
  await bouncer?.stop();
  await server?.destroy();
});

/** What an application statement on the shared server connection runs under (and that backend's pid). */
async function appSees(): Promise<Record<string, string>> {
  const { rows } = await app.query<{ name: string; value: string }>(
    `SELECT name, current_setting(name) AS value FROM unnest($1::text[]) AS name
     UNION ALL SELECT 'backend', pg_backend_pid()::text`,
    [SETTINGS],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}

/**
 * After jobvisor's statements of `kind`: the application sees its own settings.
 * The backend is reported, not compared: PgBouncer replaces a server connection
 * whose client left in the middle of a statement (a cancelled ctx.db, a probe).
 */
async function assertUntouched(kind: string): Promise<void> {
  const { backend, ...now } = await appSees();
  seen[kind] = { backend: backend ?? '', ...now };
  const { backend: _, ...expected } = baseline;
  assert.deepEqual(now, expected, `after ${kind}, the application's statement runs under its own settings`);
}

describe('PgBouncer in transaction mode: jobvisor leaves no setting behind', { skip: skipUnless(PGBOUNCER) }, () => {
  it("the pool's connections, claims and maintenance", async () => {
    const pool = createPool(pooled, { max: 2 });
    try {
      const store = { db: pool, schema: 'jobvisor' };
      await enqueue(pool, 'chaos_noop', {});
      // A new connection (its set-up statement), a claim, a planned read under planner switches.
      const claimed = await claimJobs(store, { queue: 'default', owner: 'settings-test', limit: 1, leaseMs: 1 });
      assert.equal(claimed.length, 1);
      await reapExpiredLeases(store, 100);
      await assertUntouched('pool');
    } finally {
      await pool.end();
    }
  });

  it('the readiness probe', async () => {
    const probe = new DatabaseProbe({ url: pooled, schema: 'jobvisor' });
    try {
      assert.deepEqual(await probe.check(), { ready: true });
    } finally {
      await probe.close();
    }
    await assertUntouched('readiness');
  });

  it("a task's ctx.db", async () => {
    const taskPool = createTaskPool({ connectionString: pooled, max: 1 });
    try {
      await taskPool.query('SELECT 1');
    } finally {
      await taskPool.end();
    }
    await assertUntouched('ctx.db');
  });

  it("the dashboard's pages, and its bound still holds through the pooler", async () => {
    const pool = createPool(pooled, { max: 2 });
    const d = await serveTestDashboard({ pool });
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    try {
      for (const page of ['', 'jobs', 'jobs?status=failed', 'dead-letters', 'queues/default', 'schedules'])
        assert.equal((await fetch(`${d.url}${page}`, { headers: auth })).status, 200, `/${page}`);
      await assertUntouched('dashboard');
      // Its 5 s statement bound is set per statement (SET LOCAL): through PgBouncer too.
      const direct = new pg.Client({ connectionString: url });
      await direct.connect();
      try {
        await direct.query('BEGIN');
        await direct.query('LOCK TABLE jobvisor.jobs IN ACCESS EXCLUSIVE MODE');
        const t0 = performance.now();
        const res = await fetch(`${d.url}jobs?status=failed`, { headers: auth });
        const ms = performance.now() - t0;
        assert.equal(res.status, 503);
        assert.match(await res.text(), /statement timeout/);
        assert.ok(ms < 9000, `answered after ${Math.round(ms)} ms`);
        report('pgbouncer.dashboard-bound', { status: res.status, ms: Math.round(ms) });
      } finally {
        await direct.query('ROLLBACK');
        await direct.end();
      }
      await assertUntouched('dashboard, timed out');
    } finally {
      await d.close();
      await pool.end();
    }
  });

  it('a supervisor process through the pooler: claims, outcomes, heartbeats, ctx.db, /readyz', async () => {
    const s = await spawnSupervisor({
      databaseUrl: pooled,
      tasksDir: FIXTURE_TASKS,
      config: {
        pool: { maxThreads: 1, dbPoolSize: 1 },
        queues: { default: { concurrency: 4, jobsPerThread: 4 } },
        jobs: { lease: '3s' },
        poll: { interval: '200ms' },
      },
      readyTimeoutMs: 60_000,
    });
    supervisors.push(s);
    const direct = new pg.Pool({ connectionString: url, max: 2 });
    try {
      await direct.query(
        'CREATE TABLE IF NOT EXISTS chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
      );
      const ids = (
        await enqueueMany(
          app,
          Array.from({ length: 40 }, () => ({ kind: 'chaos_run', payload: {} })),
        )
      ).map((r) => r.id);
      // A job whose ctx.db statement outlasts its 1 s timeout: cancelled through PgBouncer.
      const slow = (await enqueue(app, 'db_sleep_short', { seconds: 60 }, { maxAttempts: 1 })).id;
      await until(
        'every job finished',
        async () =>
          (
            await direct.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status IN ('done', 'failed')",
              [[...ids, slow]],
            )
          ).rows[0]?.n,
        (n) => n === ids.length + 1,
        60_000,
      );
      const finishedAt = performance.now();
      const sleeping = await until(
        'the timed-out statement gone from the server',
        async () =>
          (
            await direct.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%db_sleep job%' AND state = 'active' AND pid <> pg_backend_pid()",
            )
          ).rows[0]?.n,
        (n) => n === 0,
        5_000,
      ).catch((err: Error) => {
        // What PgBouncer did with the cancel request, to read in a failing run.
        const lines = bouncer
          .log()
          .split('\n')
          .filter((l) => /cancel|closing/i.test(l));
        throw new Error(`${err.message}\n${lines.slice(-20).join('\n')}`);
      });
      assert.equal(sleeping, 0);
      const cancelledWithinMs = Math.round(performance.now() - finishedAt);
      const ready = await fetch(`http://127.0.0.1:${s.metricsPort}/readyz`);
      assert.equal(ready.status, 200);
      await assertUntouched('a supervisor, running');
      await s.stop();
      await assertUntouched('a supervisor, stopped');
      report('pgbouncer.settings', {
        baseline,
        cancelledWithinMs,
        backends: Object.fromEntries(Object.entries(seen).map(([k, v]) => [k, v.backend])),
        allUntouched: true,
      });
    } finally {
      await direct.end();
    }
  });
});
