/**
 * Thousands of sleeping and waiting jobs cost no thread, no connection and no
 * timer: with N jobs asleep (ctx.sleep) and N parked (ctx.waitFor), the
 * supervisor holds no more threads, database connections or timers than with
 * none, and nothing is in flight. Then every sleeper wakes, and every waiter
 * resumes after one transaction signals them all; lateness (wake time or
 * signal commit → the run that resumes) is reported. Real threads, a real
 * PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { signal } from '../../src/queue/signal.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { report, summary } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

const N = 1000;
/**
 * Every sleeper sleeps until the same instant, chosen once the waiters are
 * parked: parking the sleepers takes about as long as parking the waiters did
 * (the same claims and writes), so the instant is this many times that time
 * (plus MARGIN_MS) away, and scales with the machine's load instead of a fixed
 * window sized for the slowest machine.
 */
const WAKE_FACTOR = 3;
const MARGIN_MS = 5_000;

let db: TestDatabase;
let supervisor: Supervisor;

before(async () => {
  db = await createTestDatabase('sleepers_cost');
  supervisor = startSupervisor(db.url, {
    queues: { default: { concurrency: 50, jobsPerThread: 50 } },
    pool: { maxThreads: 1 },
    reaper: { interval: '500ms' },
  });
  await supervisor.start();
});

after(async () => {
  await supervisor.stop();
  await db.drop();
});

/** What the supervisor holds: threads, its database connections, timers and jobs in flight. */
async function holdings() {
  const connections = await db.pool.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name NOT LIKE 'test%'`,
  );
  return {
    threads: supervisor.threadCount(),
    connections: connections.rows[0].n as number,
    timers: process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length,
    inFlight: supervisor.inFlight(),
  };
}

/** Jobs in `status` whose first op is `op` ('sleep', 'wait', 'value'); a pending one only while due later. */
const statusCount = async (status: string, op: string) =>
  (
    await db.pool.query(
      `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE kind = 'durable' AND status = $1
          AND payload #>> '{ops,0,0}' = $2 AND ($1 <> 'pending' OR run_at > now())`,
      [status, op],
    )
  ).rows[0].n as number;

/** Enqueues `count` copies of `spec` in statements of 500 rows. */
async function enqueueCopies(spec: { kind: string; payload: unknown }, count: number): Promise<void> {
  for (let i = 0; i < count; i += 500)
    await enqueueMany(
      db.pool,
      Array.from({ length: Math.min(500, count - i) }, () => spec),
    );
}

describe(`${N} sleeping and ${N} waiting jobs`, { timeout: 280_000 }, () => {
  it('hold no thread, connection or timer, and all resume', async () => {
    // A first job warms the thread (and its ctx.db pool) up, so the baseline has them.
    await enqueueMany(db.pool, [{ kind: 'durable', payload: { ops: [['value', 'warm', 1]] } }]);
    await until(
      'the warm-up job done',
      () => statusCount('done', 'value'),
      (n) => n === 1,
      60_000,
    );
    const idle = await holdings();

    const late: number[] = [];
    supervisor.events.on('job:steps', ({ report: r }) => {
      if (r.lateMs !== undefined) late.push(r.lateMs);
    });
    const waitingFrom = Date.now();
    await enqueueCopies({ kind: 'durable', payload: { ops: [['wait', 'go', '1h']] } }, N);
    await until(
      'every waiter parked',
      () => statusCount('waiting', 'wait'),
      (n) => n === N,
      120_000,
      100,
    );
    const parkWaitersMs = Date.now() - waitingFrom;
    const wakeAt = new Date(Date.now() + WAKE_FACTOR * parkWaitersMs + MARGIN_MS);
    await enqueueCopies({ kind: 'durable', payload: { ops: [['sleep', 'nap', `@${wakeAt.toISOString()}`]] } }, N);
    const parkedAt = await until(
      'every job asleep or waiting',
      async () => ({ sleeping: await statusCount('pending', 'sleep'), waiting: await statusCount('waiting', 'wait') }),
      (c) => c.sleeping === N && c.waiting === N,
      wakeAt.getTime() - Date.now(),
      100,
    );
    await until(
      'the supervisor settles',
      () => holdings(),
      (h) => h.inFlight === 0,
      30_000,
    );
    const parked = await holdings();
    // Measured while every sleeper still sleeps: else the figures are not those of 2N parked jobs.
    assert.equal(
      await statusCount('pending', 'sleep'),
      N,
      `every sleeper still asleep (wakes at ${wakeAt.toISOString()})`,
    );
    assert.equal(parked.threads, idle.threads, 'no thread for parked jobs');
    // The pools may open their remaining connections while busy parking (ctx.db: pool.dbPoolSize
    // per thread, and the supervisor's own pool), so the count is bounded by pool sizes, not by N:
    // a connection per parked job would be 2,000.
    assert.ok(parked.connections < 20, `no connection per job: ${idle.connections} → ${parked.connections}`);
    // Timers come and go with the loops and with the pools' idle connections (pg sets one per
    // idle client), so the bound is a few, not the idle count: a timer per parked job would be 2,000.
    assert.ok(parked.timers < idle.timers + 10, `no timer per job: ${idle.timers} → ${parked.timers}`);

    // All waiters signalled in one transaction.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const ids = (
      await client.query<{ id: string }>(`SELECT id::text AS id FROM jobvisor.jobs WHERE status = 'waiting'`)
    ).rows.map((r) => r.id);
    await client.query('BEGIN');
    for (const id of ids) await signal(client, id, 'go', { ok: true });
    await client.query('COMMIT');
    const committedAt = Date.now();
    await client.end();
    await until(
      'every waiter resumed and done',
      () => statusCount('done', 'wait'),
      (n) => n === N,
      120_000,
      100,
    );
    const signalledMs = Date.now() - committedAt;
    await until(
      'every sleeper woke and is done',
      () => statusCount('done', 'sleep'),
      (n) => n === N,
      wakeAt.getTime() - Date.now() + 120_000,
      100,
    );
    // The resumed runs' reads are gathered per turn of the thread's event loop (worker/step_reads.ts):
    // the waits' decisions took a few dozen statements (one transaction time each), not one per run.
    const decisions = (
      await db.pool.query<{ n: number }>(
        `SELECT count(DISTINCT finished_at)::int AS n FROM jobvisor.job_steps WHERE kind = 'wait' AND name = 'go'`,
      )
    ).rows[0]?.n as number;
    assert.ok(decisions <= N / 5, `${N} waits decided in ${decisions} statements, one per run or close to it`);
    const lateness = summary(late);
    assert.equal(lateness.n, N, 'every sleeper reported its lateness');
    report('sleepers and waiters', {
      n: N,
      idle,
      parked,
      parkedAt,
      parkWaitersMs,
      signalledAllDoneMs: signalledMs,
      decisions,
      lateness,
    });
  });
});
