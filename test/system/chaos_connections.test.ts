/**
 * Chaos: another application takes every connection slot PostgreSQL has left
 * for ordinary roles (`max_connections`), and the supervisor's pool loses the
 * connections it had (as an idle timeout, a firewall or an operator's
 * pg_terminate_backend closes them). The supervisor cannot open a connection:
 *   - it keeps the leases of the jobs it runs, through the connection its
 *     heartbeat holds (db/held.ts): no lease expires, every job runs once;
 *   - it says so in one line, not a line per failed round;
 *   - `jobvisor start` said how many connections it opens at most, per pool.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { clockPasses, count, report, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const LEASE_MS = 3000;
/** Three leases without a free connection slot. */
const EXHAUSTED_MS = 3 * LEASE_MS;
const REFUSED_LINE = /^database refuses new connections/;
const APP = { name: 'chaos_app', password: 'chaos-app-Pw-4d1f' };

let server: ChaosPostgres;
let appUrl: string;
let admin: pg.Pool;
let supervisor: SpawnedSupervisor | undefined;
const hog: pg.Client[] = [];

before(async () => {
  // 3 slots stay reserved for superusers: the test's own pool (admin) keeps working.
  server = await startChaosPostgres({ settings: { max_connections: 16 } });
  appUrl = await createMigratedDatabase(server, 'chaos_connections', APP);
  admin = new pg.Pool({ connectionString: server.urlOf('chaos_connections'), max: 2 });
  admin.on('error', () => {});
  await admin.query(
    `CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp());
     GRANT INSERT ON chaos_runs TO ${APP.name}`,
  );
});

after(async () => {
  await supervisor?.stop('SIGKILL');
  await Promise.all(hog.map((c) => c.end().catch(() => {})));
  await admin?.end().catch(() => {});
  await server?.destroy();
});

describe('chaos: no connection slot left', () => {
  it('keeps its leases through the connection it holds, and says so once', async () => {
    supervisor = await spawnSupervisor({
      databaseUrl: appUrl,
      tasksDir: FIXTURE_TASKS,
      config: {
        database: { poolSize: 4 },
        pool: { maxThreads: 1, dbPoolSize: 1 },
        queues: { default: { concurrency: 3, jobsPerThread: 3 } },
        jobs: { lease: `${LEASE_MS}ms` },
        reaper: { interval: '500ms' },
      },
      readyTimeoutMs: 60_000,
    });
    const s = supervisor;
    const ready = s.logs.find((l) => l.msg === 'ready') as { connections?: Record<string, number> };
    const runMs = EXHAUSTED_MS + 4000;
    const ids = (
      await enqueueMany(
        admin,
        Array.from({ length: 3 }, () => ({ kind: 'chaos_run', payload: { ms: runMs } })),
      )
    ).map((r) => r.id);
    await until(
      'the jobs run',
      () =>
        count(admin, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'running'", [ids]),
      (n) => n === 3,
      30_000,
    );
    // The task threads' ctx.db connections exist before the slots run out (the tasks write at the end).
    await until(
      'the heartbeat holds its connection',
      () =>
        count(admin, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'jobvisor-heartbeat'"),
      (n) => n === 1,
      10_000,
    );

    // Another application takes every slot left, and the pool's connections are closed (idle
    // timeout, firewall, operator): each slot they free goes to the other application too.
    const takeEverySlot = async () => {
      for (;;) {
        const c = new pg.Client({ connectionString: appUrl, application_name: 'other-app' });
        c.on('error', () => {});
        try {
          await c.connect();
          hog.push(c);
        } catch {
          return;
        }
      }
    };
    const poolBackends = () =>
      count(
        admin,
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name IN ('jobvisor', 'jobvisor-readiness')",
      );
    await takeEverySlot();
    const exhaustedAt = Date.now();
    await until(
      'the pool holds no connection and no slot is free',
      async () => {
        await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name IN ('jobvisor', 'jobvisor-readiness')",
        );
        await until('the terminated backends gone', poolBackends, (n) => n === 0, 5000, 5);
        await takeEverySlot();
        return poolBackends();
      },
      (n) => n === 0,
      10_000,
      10,
    );
    // A slot freed later (a backend still exiting) goes to the other application too.
    let grabbing = true;
    const grabber = (async () => {
      while (grabbing) {
        await takeEverySlot();
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await clockPasses('no slot free for three leases', EXHAUSTED_MS - (Date.now() - exhaustedAt), 100);
    const expiredMeanwhile = await count(
      admin,
      'SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND locked_until < now()',
      [ids],
    );
    grabbing = false;
    await grabber;
    const pooledMeanwhile = await poolBackends();
    const hogConnections = hog.length;
    await Promise.all(hog.splice(0).map((c) => c.end().catch(() => {})));

    const rows = await until(
      'the jobs done',
      async () => (await admin.query('SELECT status, attempts FROM jobvisor.jobs WHERE id = ANY($1)', [ids])).rows,
      (r) => r.every((j) => j.status === 'done'),
      runMs + 30_000,
      100,
    );
    const runs = await count(admin, 'SELECT count(*)::int AS n FROM chaos_runs WHERE job_id = ANY($1)', [ids]);
    const refusedLines = s.logs.filter((l) => REFUSED_LINE.test(String(l.msg))).length;
    const errorLines = s.logs.filter((l) => l.msg === 'database error').length;
    report('connections-exhausted', {
      hogConnections,
      pooledMeanwhile,
      exhaustedMs: EXHAUSTED_MS,
      leaseMs: LEASE_MS,
      expiredMeanwhile,
      attempts: rows.map((r) => r.attempts),
      runs,
      refusedLines,
      errorLines,
      budget: ready.connections,
    });
    assert.equal(expiredMeanwhile, 0, 'every lease renewed while no slot was free');
    assert.deepEqual(
      rows.map((r) => r.attempts),
      [1, 1, 1],
      'no job lost its lease',
    );
    assert.equal(runs, 3, 'each ran once');
    assert.equal(refusedLines, 1, 'said once');
    assert.deepEqual(
      ready.connections,
      { pool: 4, listener: 1, readiness: 1, tasks: 1, total: 7 },
      'the ready line says the budget',
    );
  });
});
