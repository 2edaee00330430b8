/**
 * Chaos: pressure. The supervisor must degrade, say so, recover, and lose
 * nothing when:
 *   - its connection pool is far smaller than its concurrency;
 *   - the server's max_connections is reached and its connections are cut;
 *   - a long-open transaction holds back vacuum while jobs churn;
 *   - a retry storm: 10,000 jobs failing over and over, with ordinary jobs
 *     arriving in the middle of it.
 * Each test reports its throughput effect (RELIABILITY.md records them).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { clockPasses, count, httpGet, report, statusCounts, summary, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS, startSupervisor } from '../helpers/inprocess.ts';
import { assertDrains, type SpawnedSupervisor, spawnSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
const running: Supervisor[] = [];
const spawned: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('chaos_pressure');
  await db.pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
});

after(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await Promise.all(spawned.map((s) => s.stop('SIGKILL')));
  await db.drop();
});

/** Runs `jobs` chaos_run jobs on a fresh in-process supervisor with `overrides`; returns jobs/s. */
async function throughput(
  jobs: number,
  overrides: Record<string, unknown>,
  kind = 'chaos_run',
): Promise<{ jobsPerSecond: number; dbErrors: number; ids: string[] }> {
  const s = startSupervisor(db.url, { poll: { interval: '1s' }, ...overrides });
  running.push(s);
  let dbErrors = 0;
  s.events.on('db:error', () => dbErrors++);
  await s.start();
  const t0 = Date.now();
  const ids = (
    await enqueueMany(
      db.pool,
      Array.from({ length: jobs }, () => ({ kind, payload: {} })),
    )
  ).map((r) => r.id);
  await until(
    `${jobs} jobs done`,
    () => count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [ids]),
    (n) => n === jobs,
    120_000,
    50,
  );
  const seconds = (Date.now() - t0) / 1000;
  await s.stop();
  return { jobsPerSecond: Math.round(jobs / seconds), dbErrors, ids };
}

describe('chaos: pressure', () => {
  it('pool exhaustion: 1 connection for 100 concurrent jobs (and 1 per thread for tasks) is slower, never wrong', async () => {
    const JOBS = 2000;
    const roomy = await throughput(JOBS, {
      database: { poolSize: 10 },
      pool: { maxThreads: 2, dbPoolSize: 5 },
      queues: { default: { concurrency: 100, jobsPerThread: 50 } },
    });
    const starved = await throughput(JOBS, {
      database: { poolSize: 1 },
      pool: { maxThreads: 2, dbPoolSize: 1 },
      queues: { default: { concurrency: 100, jobsPerThread: 50 } },
    });
    const runs = await count(db.pool, 'SELECT count(*)::int AS n FROM chaos_runs WHERE job_id = ANY($1)', [
      starved.ids,
    ]);
    const distinct = await count(
      db.pool,
      'SELECT count(DISTINCT job_id)::int AS n FROM chaos_runs WHERE job_id = ANY($1)',
      [starved.ids],
    );
    const expired = await count(
      db.pool,
      "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND errors <> '[]'",
      [starved.ids],
    );
    report('pressure.pool-exhaustion', {
      jobs: JOBS,
      concurrency: 100,
      roomy: { poolSize: 10, taskPoolPerThread: 5, jobsPerSecond: roomy.jobsPerSecond },
      starved: { poolSize: 1, taskPoolPerThread: 1, jobsPerSecond: starved.jobsPerSecond, dbErrors: starved.dbErrors },
      runs,
      failedAttempts: expired,
    });
    assert.equal(runs, JOBS, 'each job ran once');
    assert.equal(distinct, JOBS);
    assert.equal(expired, 0, 'no attempt failed or expired');
    assert.equal(starved.dbErrors, 0, 'waiting for a connection is not an error');
  });

  it('max_connections reached: a running supervisor whose connections are cut and a replica starting meanwhile wait, say why, then recover and lose nothing', async () => {
    let server: ChaosPostgres | undefined;
    const hogs: pg.Client[] = [];
    try {
      server = await startChaosPostgres({ settings: { max_connections: 20, superuser_reserved_connections: 3 } });
      const app = { name: 'jobvisor_app', password: `app-Pw-${Date.now()}` };
      const url = await createMigratedDatabase(server, 'chaos_maxconn', app);
      const admin = new pg.Pool({ connectionString: server.urlOf('chaos_maxconn'), max: 1 });
      admin.on('error', () => {});
      /** Opens connections as the application role until the server refuses one (53300). */
      const hogAll = async () => {
        for (;;) {
          const batch = await Promise.allSettled(
            Array.from({ length: 4 }, async () => {
              const c = new pg.Client({
                connectionString: url,
                application_name: 'hog',
                connectionTimeoutMillis: 5000,
              });
              c.on('error', () => {});
              await c.connect();
              hogs.push(c);
            }),
          );
          const refused = batch.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
          for (const r of refused)
            assert.equal(
              (r.reason as { code?: string }).code,
              '53300',
              `refused for want of slots: ${(r.reason as Error).message}`,
            );
          if (refused.length > 0) return;
          assert.ok(hogs.length < 20, 'max_connections is in force');
        }
      };
      const config = {
        database: { poolSize: 3 },
        pool: { maxThreads: 1, dbPoolSize: 1 },
        queues: { default: { concurrency: 10, jobsPerThread: 10 } },
        poll: { interval: '1s' },
        jobs: { lease: '5s' },
        reaper: { interval: '1s' },
      };
      try {
        await admin.query(
          'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
        );
        await admin.query('ALTER TABLE chaos_runs OWNER TO jobvisor_app');
        const running = await spawnSupervisor({
          databaseUrl: url,
          tasksDir: FIXTURE_TASKS,
          config,
          readyTimeoutMs: 60_000,
        });
        spawned.push(running);
        const warm = (
          await enqueueMany(
            admin,
            Array.from({ length: 100 }, () => ({ kind: 'chaos_run', payload: {} })),
          )
        ).map((r) => r.id);
        await until(
          'warm-up jobs done',
          () =>
            count(admin, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [warm]),
          (n) => n === 100,
          30_000,
        );
        await hogAll();
        const mark = running.logs.length;
        const squeezeAt = Date.now();
        // Cut the running supervisor's connections (superuser slots are reserved, so this
        // still works) and take the freed slots before it can reconnect.
        const cut = (
          await admin.query(
            "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = 'chaos_maxconn' AND application_name LIKE 'jobvisor%'",
          )
        ).rows[0].n;
        await hogAll();
        // A replica starting now cannot connect at all.
        const { freePort } = await import('../helpers/chaos/postgres.ts');
        const replicaPort = await freePort();
        const replica = await spawnSupervisor({
          databaseUrl: url,
          tasksDir: FIXTURE_TASKS,
          config: { ...config, metrics: { port: replicaPort, host: '127.0.0.1' } },
          waitReady: false,
        });
        spawned.push(replica);
        const during = (
          await enqueueMany(
            admin,
            Array.from({ length: 200 }, () => ({ kind: 'chaos_run', payload: {} })),
          )
        ).map((r) => r.id);
        const replicaWaiting = await replica.waitForLog(/waiting before starting to claim jobs/, 60_000);
        const replicaReadyz = await until(
          'replica readyz 503',
          () => httpGet(replicaPort, '/readyz'),
          (r) => r.status === 503,
          20_000,
          200,
        );
        const runningReadyz = await httpGet(running.metricsPort, '/readyz');
        // Whichever part of the running one meets a refusal (its pool, its listener, a task's
        // ctx.db) says so; it may also win a freed slot back first and carry on, degraded.
        const refusal = await running
          .waitForLog(/./, 5000, (l) => /too many clients|remaining connection slots|53300/i.test(JSON.stringify(l)))
          .catch(() => null);
        const doneDuring = await count(
          admin,
          "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'",
          [during],
        );
        const releaseAt = Date.now();
        await Promise.all(hogs.splice(0).map((c) => c.end().catch(() => {})));
        await replica.waitForLog(/^ready$/, 60_000);
        const replicaReadyMs = Date.now() - releaseAt;
        await until(
          'running supervisor ready again',
          () => httpGet(running.metricsPort, '/readyz'),
          (r) => r.status === 200,
          30_000,
          200,
        );
        await until(
          'jobs enqueued during the squeeze done',
          () =>
            count(admin, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [
              during,
            ]),
          (n) => n === during.length,
          60_000,
        );
        const recoveredMs = Date.now() - releaseAt;
        const lines = running.logs.slice(mark);
        const warnLines = lines.filter((l) => Number(l.level) >= 40);
        const longestLogLine = Math.max(...[...lines, ...replica.logs].map((l) => JSON.stringify(l).length));
        const runs = await count(admin, 'SELECT count(*)::int AS n FROM chaos_runs WHERE job_id = ANY($1)', [during]);
        const text = (v: unknown) => (typeof v === 'string' ? v : v === undefined ? undefined : JSON.stringify(v));
        const message = (l: Record<string, unknown>) =>
          (text((l.err as { message?: unknown } | undefined)?.message) ?? text(l.error) ?? text(l.reason) ?? '').slice(
            0,
            100,
          );
        report('pressure.max-connections', {
          maxConnections: 20,
          supervisorConnectionsCut: cut,
          squeezeMs: releaseAt - squeezeAt,
          running: {
            readyzDuring: runningReadyz.status,
            firstRefusal: refusal ? `${String(refusal.msg)}: ${message(refusal)}` : 'none (it won slots back)',
            warnLinesDuringSqueeze: warnLines.length,
            longestLogLine,
          },
          replica: {
            waiting: `${String(replicaWaiting.msg)}: ${message(replicaWaiting)}`,
            readyzDuring: replicaReadyz.status,
            readyAfterReleaseMs: replicaReadyMs,
          },
          doneDuringSqueeze: doneDuring,
          allDoneAfterReleaseMs: recoveredMs,
          runs,
          statuses: await statusCounts(admin, 'id = ANY($1)', [during]),
        });
        assert.match(replicaReadyz.body, /database unreachable/);
        assert.equal(runs, during.length, 'each job of the squeeze ran once');
        assert.ok(
          running.child.exitCode === null && replica.child.exitCode === null,
          'both supervisors lived through it',
        );
        assert.ok(warnLines.length < 300, `bounded logging: ${warnLines.length} warn/error lines`);
        // Clear logs: a failed idle connection is its error, not the kilobytes of the pg Client pg-pool attaches to it.
        assert.ok(longestLogLine < 2048, `longest log line ${longestLogLine} bytes`);
        await assertDrains(replica);
        await assertDrains(running);
      } finally {
        await admin.end();
      }
    } finally {
      await Promise.all(hogs.map((c) => c.end().catch(() => {})));
      await server?.destroy();
    }
  });

  it('a long-open transaction holding back vacuum: claims slow down, nothing is lost, speed returns after it ends', async () => {
    const JOBS = 4000;
    const overrides = { pool: { maxThreads: 1 }, queues: { default: { concurrency: 50, jobsPerThread: 50 } } };
    const dead = async () =>
      Number(
        (await db.pool.query("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'jobvisor.jobs'::regclass"))
          .rows[0].n_dead_tup,
      );
    await db.pool.query('VACUUM jobvisor.jobs');
    const baseline = await throughput(JOBS, overrides, 'chaos_noop');
    // A transaction that keeps its snapshot open: no row version deleted after it began can be vacuumed.
    const holder = new pg.Client({ connectionString: db.url, application_name: 'chaos-holder' });
    await holder.connect();
    let held: Awaited<ReturnType<typeof throughput>>[];
    let deadWhileHeld: number;
    try {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query('SELECT count(*) FROM jobvisor.jobs');
      held = [await throughput(JOBS, overrides, 'chaos_noop'), await throughput(JOBS, overrides, 'chaos_noop')];
      await db.pool.query('VACUUM jobvisor.jobs');
      deadWhileHeld = await dead();
    } finally {
      await holder.query('COMMIT').catch(() => {});
      await holder.end();
    }
    await db.pool.query('VACUUM jobvisor.jobs');
    const deadAfter = await dead();
    const recovered = await throughput(JOBS, overrides, 'chaos_noop');
    const statuses = await statusCounts(db.pool, "kind = 'chaos_noop'");
    report('pressure.long-transaction', {
      jobsPerRound: JOBS,
      baselineJobsPerSecond: baseline.jobsPerSecond,
      heldJobsPerSecond: held.map((h) => h.jobsPerSecond),
      deadTuplesVacuumCouldNotRemove: deadWhileHeld,
      deadTuplesAfterCommitAndVacuum: deadAfter,
      recoveredJobsPerSecond: recovered.jobsPerSecond,
      statuses,
    });
    assert.deepEqual(statuses, { done: JOBS * 4 }, 'nothing lost');
    assert.ok(deadWhileHeld > JOBS, `the open transaction kept ${deadWhileHeld} dead row versions alive`);
    assert.ok(deadAfter < deadWhileHeld / 10, 'vacuum removes them once it ends');
  });

  it('a retry storm: 10,000 jobs failing three times each; jobs of another queue keep their pickup time, jobs of the same queue wait their turn', async () => {
    const STORM = 10_000;
    const s = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: {
        pool: { maxThreads: 3 },
        queues: { default: { concurrency: 100, jobsPerThread: 50 }, urgent: { concurrency: 10, jobsPerThread: 10 } },
        backoff: { base: '200ms', max: '1s', jitter: 0.5 },
        poll: { interval: '1s' },
      },
      readyTimeoutMs: 60_000,
    });
    spawned.push(s);
    const mark = s.logs.length;
    const t0 = Date.now();
    const storm = (
      await enqueueMany(
        db.pool,
        Array.from({ length: STORM }, () => ({ kind: 'chaos_fail', maxAttempts: 3 })),
      )
    ).map((r) => r.id);
    const stormDone = () =>
      count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'failed'", [storm]);
    // Ordinary jobs arrive in small batches throughout the storm.
    const ordinary: string[] = [];
    const urgent: string[] = [];
    while ((await stormDone()) < STORM && Date.now() - t0 < 120_000) {
      ordinary.push(
        ...(
          await enqueueMany(
            db.pool,
            Array.from({ length: 10 }, () => ({ kind: 'chaos_noop' })),
          )
        ).map((r) => r.id),
      );
      urgent.push(
        ...(
          await enqueueMany(
            db.pool,
            Array.from({ length: 10 }, () => ({ kind: 'chaos_noop', queue: 'urgent' })),
          )
        ).map((r) => r.id),
      );
      await clockPasses('between ordinary batches', 250, 50);
    }
    await until('retry storm over', stormDone, (n) => n === STORM, 120_000, 200);
    const stormMs = Date.now() - t0;
    const all = [...ordinary, ...urgent];
    await until(
      'ordinary jobs done',
      () =>
        count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [all]),
      (n) => n === all.length,
      30_000,
    );
    const pickupOf = async (ids: string[]) =>
      (
        await db.pool.query<{ ms: number }>(
          'SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms FROM jobvisor.jobs WHERE id = ANY($1)',
          [ids],
        )
      ).rows.map((r) => Math.round(Number(r.ms)));
    const pickup = await pickupOf(ordinary);
    const urgentPickup = await pickupOf(urgent);
    const shape = (
      await db.pool.query<{ attempts: number; history: number; n: number }>(
        'SELECT attempts, jsonb_array_length(errors) AS history, count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) GROUP BY 1, 2',
        [storm],
      )
    ).rows;
    const lines = s.logs.slice(mark);
    const byMsg: Record<string, number> = {};
    for (const l of lines) {
      const msg = typeof l.msg === 'string' ? l.msg : 'raw';
      byMsg[msg] = (byMsg[msg] ?? 0) + 1;
    }
    report('pressure.retry-storm', {
      failingJobs: STORM,
      attemptsEach: 3,
      stormMs,
      attemptsPerSecond: Math.round((STORM * 3) / (stormMs / 1000)),
      ordinaryJobs: ordinary.length,
      sameQueuePickupMs: summary(pickup),
      otherQueuePickupMs: summary(urgentPickup),
      finalShape: shape,
      logLines: byMsg,
    });
    assert.deepEqual(
      shape,
      [{ attempts: 3, history: 3, n: STORM }],
      'every storm job: three attempts recorded, then dead-lettered',
    );
    assert.ok(urgent.length > 0);
    // Another queue has its own concurrency: most of its jobs start at once; the tail is the
    // shared CPU and connection pool (2 vCPUs running the storm, PostgreSQL and the test).
    assert.ok(
      summary(urgentPickup).p50 < 1000,
      `another queue kept its pickup time: ${JSON.stringify(summary(urgentPickup))} ms`,
    );
    // Half the storm queue's p95 at most: a queue stuck behind the storm would wait as long
    // as the storm's own jobs. The tail, not the median: most same-queue jobs now start within
    // tens of ms too (p50 23 ms, against 622 ms before the second hardening round), and only
    // those behind a wave of due retries wait (p95 1.7–2.1 s, against the other queue's 37–319 ms).
    assert.ok(
      summary(urgentPickup).p95 * 2 < summary(pickup).p95,
      `and far better than the storm's own queue: p95 ${summary(urgentPickup).p95} against ${summary(pickup).p95} ms`,
    );
    // Same queue: FIFO by due time, so a new job waits behind the retries already due (bounded by the storm).
    assert.ok(
      summary(pickup).max < stormMs + 5000,
      `same-queue jobs waited at most the storm: ${JSON.stringify(summary(pickup))} ms`,
    );
    await assertDrains(s);
  });
});
