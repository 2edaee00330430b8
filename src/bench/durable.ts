/**
 * The durable-steps scenarios (issue 46), each on a fresh database through one
 * warmed in-process supervisor (the bench queue's shape), with the task
 * tasks/bench_durable.ts:
 *   - steps: N jobs of 1 step, then N jobs of 10 steps, alternating over the
 *     runs; jobs/s of each (enqueue commit → all done), the time of a ctx.step
 *     call (call → record committed: p50, p99, from inside the task) and the
 *     WAL per recorded step (the database's WAL over each phase, db_wal.ts:
 *     the 10-step phase's WAL per job less the 1-step one's, over 9);
 *   - sleepers: N jobs enqueued in one statement, each sleeping `sleepMs` in
 *     its first run; every one must wake: lateness is the resumed run's read
 *     of its records less the wake time, by the database's clock (what the
 *     late-wake metric observes), p50, p99 and max. Then the same for a
 *     stream of up to 1,000 sleepers, one enqueued every 50 ms;
 *   - signals: N jobs parked in waitFor('go'), then signalled in ONE
 *     transaction (plain SQL, one statement); resume is the wait record's
 *     decision time (finished_at) less the commit, both by the database's
 *     clock, p50, p99 and max.
 * Speed is reported, never asserted.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { withClient } from '../db/borrow.ts';
import { enqueueMany } from '../queue/enqueue.ts';
import type { BenchDatabase } from './database.ts';
import { BENCH_QUEUE, type QueueShape } from './harness.ts';
import { startDatabaseWal } from './db_wal.ts';
import { withWarmSupervisor } from './process.ts';
import { makeRow, type Row } from './report.ts';
import { quantile } from './stats.ts';

export const DURABLE_SCENARIOS = ['steps', 'sleepers', 'signals'] as const;
export type DurableScenario = (typeof DURABLE_SCENARIOS)[number];

export interface DurableBench {
  runs: number;
  jobs: number;
  sleepMs: number;
  shape: QueueShape;
  fresh<T>(label: string, fn: (db: BenchDatabase) => Promise<T>): Promise<T>;
  emit(row: Row): void;
}

const jobsOf = (n: number, payload: Record<string, unknown>) =>
  Array.from({ length: n }, () => ({ kind: 'bench_durable', queue: BENCH_QUEUE, payload }));

/** One phase of the steps scenario: jobs/s, WAL per job and every ctx.step call's time. */
async function stepsPhase(db: BenchDatabase, b: DurableBench, steps: number) {
  const stepMs: number[] = [];
  const channel = new BroadcastChannel('jobvisor-bench-durable');
  channel.onmessage = (e) => stepMs.push(...((e as MessageEvent).data as { stepMs: number[] }).stepMs);
  try {
    return await withWarmSupervisor(db, b.shape, async (completions) => {
      const wal = await startDatabaseWal(db.pool);
      const all = completions(b.jobs);
      await enqueueMany(db.pool, jobsOf(b.jobs, { steps }));
      const t0 = performance.now();
      await all;
      const jobsPerSec = b.jobs / ((performance.now() - t0) / 1000);
      const w = await wal.stop();
      return { jobsPerSec, walPerJob: w.bytes / b.jobs, walScope: w.scope, walNote: w.note, stepMs };
    });
  } finally {
    channel.close();
  }
}

const summary = (values: number[]) => ({
  n: values.length,
  p50: quantile(values, 0.5),
  p99: quantile(values, 0.99),
  max: Math.max(...values),
});

/** A stream's sleepers: one enqueued every STREAM_GAP_MS, STREAM_MAX at most. */
export const STREAM_GAP_MS = 50;
export const STREAM_MAX = 1000;

/**
 * Sleepers: every lateness the resumed runs reported. All in one statement
 * (`stream` false), or one every STREAM_GAP_MS, so their wake times are as far
 * apart: what a wake costs when the queue keeps up, not a backlog's wait.
 */
async function sleepers(db: BenchDatabase, b: DurableBench, stream: boolean) {
  return withWarmSupervisor(db, b.shape, async (completions, supervisor) => {
    const late: number[] = [];
    supervisor.events.on('job:steps', ({ report }) => {
      if (report.lateMs !== undefined) late.push(report.lateMs);
    });
    const n = stream ? Math.min(b.jobs, STREAM_MAX) : b.jobs;
    const all = completions(n);
    if (!stream) await enqueueMany(db.pool, jobsOf(n, { sleepMs: b.sleepMs }));
    else
      for (let i = 0; i < n; i++) {
        await enqueueMany(db.pool, jobsOf(1, { sleepMs: b.sleepMs }));
        await new Promise((r) => setTimeout(r, STREAM_GAP_MS));
      }
    await all;
    return summary(late);
  });
}

const count = async (db: BenchDatabase, status: string) =>
  (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = $1', [status]))
    .rows[0]?.n ?? 0;

/** Signals: every wait's resume after the one commit that signalled them all. */
async function signals(db: BenchDatabase, b: DurableBench) {
  return withWarmSupervisor(db, b.shape, async (completions) => {
    await enqueueMany(db.pool, jobsOf(b.jobs, { wait: true }));
    const deadline = Date.now() + 600_000;
    while ((await count(db, 'waiting')) < b.jobs) {
      if (Date.now() > deadline) throw new Error('bench signals: the jobs did not all park in 10 minutes');
      await new Promise((r) => setTimeout(r, 100));
    }
    const all = completions(b.jobs);
    const commitAt = await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      await client.query(
        `SELECT count(jobvisor.signal(id, 'go')) FROM jobvisor.jobs WHERE status = 'waiting' AND kind = 'bench_durable'`,
      );
      await client.query('COMMIT');
      return (await client.query<{ t: Date }>('SELECT clock_timestamp() AS t')).rows[0]?.t as Date;
    });
    await all;
    const { rows } = await db.pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM finished_at - $1::timestamptz)::float8 * 1000 AS ms
         FROM jobvisor.job_steps WHERE kind = 'wait' AND name = 'go'`,
      [commitAt],
    );
    return summary(rows.map((r) => Math.max(0, r.ms)));
  });
}

/** Runs `measure` `runs` times on fresh databases and emits its p50, p99 and max rows. */
async function latencyRows(
  b: DurableBench,
  name: string,
  measure: (db: BenchDatabase) => Promise<ReturnType<typeof summary>>,
): Promise<void> {
  const rs: Array<ReturnType<typeof summary>> = [];
  for (let r = 0; r < b.runs; r++) rs.push(await b.fresh('durable', measure));
  const more = { jobs: b.jobs, shape: b.shape, resumed: rs.map((x) => x.n), sleepMs: b.sleepMs };
  b.emit(
    makeRow(
      `${name} p50`,
      'jobvisor',
      'ms',
      rs.map((x) => x.p50),
      more,
    ),
  );
  b.emit(
    makeRow(
      `${name} p99`,
      'jobvisor',
      'ms',
      rs.map((x) => x.p99),
      more,
    ),
  );
  b.emit(
    makeRow(
      `${name} max`,
      'jobvisor',
      'ms',
      rs.map((x) => x.max),
      more,
    ),
  );
}

export async function runDurableScenario(scenario: DurableScenario, b: DurableBench): Promise<void> {
  const extra = { jobs: b.jobs, shape: b.shape };
  if (scenario === 'steps') {
    const one: Array<Awaited<ReturnType<typeof stepsPhase>>> = [];
    const ten: typeof one = [];
    for (let r = 0; r < b.runs; r++) {
      one.push(await b.fresh('steps1', (db) => stepsPhase(db, b, 1)));
      ten.push(await b.fresh('steps10', (db) => stepsPhase(db, b, 10)));
    }
    const name = `steps ${b.jobs}`;
    b.emit(
      makeRow(
        name,
        'jobvisor 1-step job',
        'jobs/s',
        one.map((x) => x.jobsPerSec),
        extra,
      ),
    );
    b.emit(
      makeRow(
        name,
        'jobvisor 10-step job',
        'jobs/s',
        ten.map((x) => x.jobsPerSec),
        extra,
      ),
    );
    const q = (p: number) => ten.map((x) => quantile(x.stepMs, p));
    b.emit(makeRow(`${name}: ctx.step p50`, 'jobvisor', 'ms', q(0.5), extra));
    b.emit(makeRow(`${name}: ctx.step p99`, 'jobvisor', 'ms', q(0.99), extra));
    const wal = ten.map((x, i) => (x.walPerJob - (one[i]?.walPerJob ?? 0)) / 9);
    const walScope = ten.map((x) => x.walNote ?? x.walScope);
    b.emit(makeRow(`${name}: WAL per recorded step`, 'jobvisor', 'bytes', wal, { ...extra, walScope }));
    b.emit(
      makeRow(
        `${name}: WAL per 1-step job`,
        'jobvisor',
        'bytes',
        one.map((x) => x.walPerJob),
        extra,
      ),
    );
  } else if (scenario === 'sleepers') {
    const n = Math.min(b.jobs, STREAM_MAX);
    await latencyRows(b, `sleepers ${b.jobs} × ${b.sleepMs} ms: wake lateness`, (db) => sleepers(db, b, false));
    await latencyRows(b, `sleepers ${n} one per ${STREAM_GAP_MS} ms × ${b.sleepMs} ms: wake lateness`, (db) =>
      sleepers(db, b, true),
    );
  } else {
    await latencyRows(b, `signals ${b.jobs} in one commit: resume after commit`, (db) => signals(db, b));
  }
}
