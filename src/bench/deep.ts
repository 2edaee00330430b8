/**
 * Scenario "deep": claims on a table holding a deep backlog and a long history
 * (default 1,000,000 pending plus 5,000,000 done rows) against the same claims
 * on a shallow table. Measured two ways: the latency of one claim of 50 jobs
 * (claim + fenced completion, repeated), and no-op processing throughput.
 */
import { claimJobs } from '../queue/claim.ts';
import { completeJobs } from '../queue/complete.ts';
import type { Store } from '../queue/sql.ts';
import type { BenchDatabase } from './database.ts';
import { BENCH_QUEUE, type QueueShape } from './harness.ts';
import { processInProcess } from './process.ts';
import { median } from './stats.ts';

export async function fillTable(db: BenchDatabase, pending: number, done: number): Promise<void> {
  const chunk = 500_000;
  for (let from = 0; from < done; from += chunk) {
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (queue, kind, payload, status, attempts, run_at, started_at, finished_at, locked_by)
       SELECT $1, 'noop', jsonb_build_object('i', g), 'done', 1, now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', 'history'
         FROM generate_series(1, $2) g`,
      [BENCH_QUEUE, Math.min(chunk, done - from)],
    );
  }
  for (let from = 0; from < pending; from += chunk) {
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (queue, kind, payload) SELECT $1, 'noop', jsonb_build_object('i', g) FROM generate_series(1, $2) g`,
      [BENCH_QUEUE, Math.min(chunk, pending - from)],
    );
  }
  await db.pool.query('VACUUM ANALYZE jobvisor.jobs');
}

/** Median ms of one claim of `batch` jobs plus its fenced completion, over `rounds`. */
export async function claimLatency(db: BenchDatabase, rounds: number, batch = 50): Promise<number> {
  const store: Store = { db: db.pool, schema: 'jobvisor' };
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    const jobs = await claimJobs(store, { owner: 'bench', queue: BENCH_QUEUE, limit: batch, leaseMs: 60_000 });
    await completeJobs(
      store,
      'bench',
      jobs.map((j) => j.id),
      jobs.map((j) => j.token),
    );
    times.push(performance.now() - t0);
    if (jobs.length < batch) throw new Error(`the table ran out of pending jobs after ${i} rounds`);
  }
  return median(times);
}

export async function deepVersusShallow(
  deep: BenchDatabase,
  shallow: BenchDatabase,
  options: { pending: number; done: number; jobs: number; shape: QueueShape },
) {
  await fillTable(deep, options.pending, options.done);
  await fillTable(shallow, 20_000, 0);
  const rounds = Math.max(1, Math.min(200, Math.floor(options.pending / 50) - 1));
  const deepClaimMs = await claimLatency(deep, rounds);
  const shallowClaimMs = await claimLatency(shallow, rounds);
  // Processing: the deep table keeps its backlog; the shallow one gets only the jobs.
  const deepRun = await processInProcess(deep, options.jobs, options.shape);
  await shallow.pool.query('DELETE FROM jobvisor.jobs');
  await shallow.pool.query('VACUUM ANALYZE jobvisor.jobs');
  const shallowRun = await processInProcess(shallow, options.jobs, options.shape);
  return { deepClaimMs, shallowClaimMs, deepJobsPerSec: deepRun.jobsPerSec, shallowJobsPerSec: shallowRun.jobsPerSec };
}
