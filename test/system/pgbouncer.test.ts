/**
 * jobvisor through a real PgBouncer (Debian's), in session and in transaction
 * pooling mode, with supervisors as child processes:
 *   - tasks' ctx.db works through it (it sent a startup parameter PgBouncer
 *     refuses: 0 of 2,000 jobs were done);
 *   - transaction pooling: the statements that relied on a session (named
 *     prepared statements, the paused-queue read once a second) run correctly;
 *     LISTEN goes to database.directUrl, so a plain INSERT starts at once with
 *     a 30 s poll; a pause through the pooler reaches the supervisor;
 *   - the cost: the same burst directly and through each mode (reported).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { pauseQueue, resumeQueue } from '../../src/queue/pause.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { count, pickupMs, report, until } from '../helpers/chaos/measure.ts';
import { startPgBouncer, type PgBouncer } from '../helpers/chaos/pgbouncer.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';
import { PGBOUNCER, skipUnless } from '../helpers/tools.ts';

const JOBS = 2000;
const DB = 'chaos_pgbouncer';
const CONFIG = {
  pool: { maxThreads: 2, dbPoolSize: 2 },
  queues: { default: { concurrency: 40, jobsPerThread: 20 } },
  poll: { interval: '30s' },
};

let server: ChaosPostgres;
let url: string;
let pool: pg.Pool;
const bouncers: PgBouncer[] = [];
const supervisors: SpawnedSupervisor[] = [];
const bursts: Record<string, number> = {};

before(async () => {
  if (skipUnless(PGBOUNCER)) return;
  server = await startChaosPostgres({ settings: { max_connections: 200 } });
  url = await createMigratedDatabase(server, DB);
  pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('error', () => {});
  await pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop('SIGKILL')));
  await Promise.all(bouncers.map((b) => b.stop()));
  await pool?.end().catch(() => {});
  await server?.destroy();
});

/** Enqueues JOBS chaos_run jobs (each inserts a row through ctx.db) through `db`; resolves with the ms until all are done. */
async function burst(db: pg.Pool, label: string): Promise<number> {
  // Warm: threads started and the task loaded, so each burst measures the path to the database only.
  const warm = (
    await enqueueMany(
      db,
      Array.from({ length: 200 }, () => ({ kind: 'chaos_run', payload: {} })),
    )
  ).map((r) => r.id);
  await until(
    `${label}: warm-up done`,
    () => count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [warm]),
    (n) => n === warm.length,
    120_000,
    50,
  );
  await pool.query('TRUNCATE chaos_runs');
  const t0 = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < JOBS; i += 500)
    ids.push(
      ...(
        await enqueueMany(
          db,
          Array.from({ length: 500 }, () => ({ kind: 'chaos_run', payload: {} })),
        )
      ).map((r) => r.id),
    );
  await until(
    `${label}: ${JOBS} jobs done`,
    () => count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [ids]),
    (n) => n === JOBS,
    120_000,
    50,
  );
  const ms = performance.now() - t0;
  assert.equal(
    await count(pool, 'SELECT count(DISTINCT job_id)::int AS n FROM chaos_runs'),
    JOBS,
    `${label}: ctx.db wrote every row`,
  );
  bursts[label] = Math.round(ms);
  return ms;
}

function pickup(db: pg.Pool): Promise<number> {
  return pickupMs(db, { read: pool });
}

function databaseErrors(s: SpawnedSupervisor): string[] {
  return s.logs.filter((l) => l.msg === 'database error' || l.level === 50).map((l) => JSON.stringify(l).slice(0, 300));
}

describe('PgBouncer', { skip: skipUnless(PGBOUNCER) }, () => {
  it('direct: the burst to compare with', async () => {
    const s = await spawnSupervisor({
      databaseUrl: url,
      tasksDir: FIXTURE_TASKS,
      config: CONFIG,
      readyTimeoutMs: 60_000,
    });
    supervisors.push(s);
    await burst(pool, 'direct');
    await s.stop();
  });

  for (const mode of ['session', 'transaction'] as const) {
    it(`${mode} pooling: ctx.db, claims, outcomes, pause and LISTEN work through it`, async () => {
      const bouncer = await startPgBouncer(server, DB, mode);
      bouncers.push(bouncer);
      const pooled = bouncer.urlFor(url);
      const s = await spawnSupervisor({
        databaseUrl: pooled,
        // Transaction pooling: LISTEN needs a session of its own.
        env: mode === 'transaction' ? { DATABASE_DIRECT_URL: url } : {},
        tasksDir: FIXTURE_TASKS,
        config: CONFIG,
        readyTimeoutMs: 60_000,
      });
      supervisors.push(s);
      const producer = new pg.Pool({ connectionString: pooled, max: 3 });
      producer.on('error', () => {});
      try {
        await burst(producer, mode);
        // A pause written through the pooler reaches the supervisor; so does the resume.
        await pauseQueue(producer, 'default');
        await s.waitForLog(/^queue paused/, 15_000);
        await resumeQueue(producer, 'default');
        const pickups = [await pickup(producer), await pickup(producer), await pickup(producer)];
        const ready = s.logs.find((l) => l.msg === 'ready') as Record<string, unknown>;
        const errors = databaseErrors(s);
        report(`pgbouncer.${mode}`, {
          jobs: JOBS,
          burstMs: bursts[mode],
          directMs: bursts.direct,
          pickups,
          listen: ready.listen,
        });
        assert.deepEqual(errors, [], 'no database error through the pooler');
        assert.ok(Math.max(...pickups) < 1500, `LISTEN works: pickups ${JSON.stringify(pickups)} ms (poll 30 s)`);
        if (mode === 'transaction') assert.equal(ready.listen, 'database.directUrl');
      } finally {
        await producer.end();
        await s.stop();
      }
    });
  }
});
