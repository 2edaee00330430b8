/**
 * Scenario "burst": the most common production pattern, a quiet spell then a
 * burst. A supervisor with the given configuration starts on a fresh table and
 * runs WARM_UP no-op jobs (so the table is small and the code warm), then N
 * jobs arrive in ONE statement (`INSERT … SELECT generate_series`). The clock
 * runs from that commit's return until the database says none is left pending
 * or running: as in the peers' harness (bench/peers/scenarios/burst.mjs), the
 * database is polled every 2 ms once the tasks started reach the total, not
 * throughout the burst (polling throughout cost jobvisor's run PostgreSQL CPU
 * the peers' runs did not pay); the check that all are done follows, untimed
 * (waitAllDone). With
 * `analyze`, the same burst commits together with an `ANALYZE` of the table,
 * which is what the burst would see once autovacuum had caught up. Each run
 * also reports PostgreSQL's CPU time and WAL bytes per job, from the insert
 * to the last job done.
 */
import { withClient } from '../db/borrow.ts';
import { enqueueMany } from '../queue/enqueue.ts';
import type { BenchDatabase } from './database.ts';
import { configuredSupervisor, jobCounter } from './harness.ts';
import { processOfRounds, roundOnItsOwn } from './own_process.ts';
import { startPgCost, type PerJobCost } from './pg_cost.ts';
import { waitAllDone, WARM_UP } from './process.ts';
import type { Variant } from './report.ts';

/** The configurations measured side by side: what a user writes first, and the tuned shape. */
export const BURST_CONFIGS: Record<string, Record<string, unknown>> = {
  'concurrency-only': { queues: { default: { concurrency: 50 } } },
  tuned: { queues: { default: { concurrency: 50, jobsPerThread: 50, prefetch: 2000 } }, pool: { maxThreads: 1 } },
  // The tuned shape keeping no done job (cleanup.retention 0: deleted at completion), as Graphile Worker does.
  'tuned-keep-none': {
    queues: { default: { concurrency: 50, jobsPerThread: 50, prefetch: 2000 } },
    pool: { maxThreads: 1 },
    cleanup: { retention: '0' },
  },
};

export interface BurstResult {
  jobs: number;
  seconds: number;
  jobsPerSec: number;
  /** PostgreSQL's CPU and WAL per job, from the insert's start to the last job done (src/bench/pg_cost.ts). */
  cost: PerJobCost;
}

export async function burst(
  db: BenchDatabase,
  jobs: number,
  config: Record<string, unknown>,
  options: { analyze: boolean },
): Promise<BurstResult> {
  const supervisor = configuredSupervisor(db.url, config);
  const started = jobCounter(supervisor, 'job:started');
  await supervisor.start();
  try {
    await enqueueMany(
      db.pool,
      Array.from({ length: WARM_UP }, (_, i) => ({ kind: 'noop', payload: { i } })),
    );
    await waitAllDone(db, WARM_UP);
    const cost = await startPgCost(db.pool);
    await withClient(db.pool, async (client) => {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, $1::int)`,
        [jobs],
      );
      if (options.analyze) await client.query('ANALYZE jobvisor.jobs');
      await client.query('COMMIT');
    });
    const t0 = performance.now();
    await started.reached(WARM_UP + jobs);
    const seconds = ((await waitAllDone(db, WARM_UP + jobs, 2)) - t0) / 1000;
    return { jobs, seconds, jobsPerSec: jobs / seconds, cost: await cost.stop(jobs) };
  } finally {
    await supervisor.stop();
  }
}

/**
 * The burst scenario's jobvisor systems for N jobs: each config, without and
 * with ANALYZE after the insert. With `ownProcess` (beside the peers) each
 * round runs in a process of its own, as theirs do (own_process.ts).
 */
export function burstVariants(
  n: number,
  configs: readonly string[],
  options: {
    serverUrl: string;
    ownProcess: boolean;
    fresh: <T>(label: string, fn: (db: BenchDatabase) => Promise<T>) => Promise<T>;
  },
): Variant[] {
  return configs.flatMap((c) =>
    [false, true].map((analyze) => {
      const perJob: PerJobCost[] = [];
      const system = `jobvisor ${c}${analyze ? ' +ANALYZE' : ''}`;
      const measure = async (): Promise<number> => {
        if (options.ownProcess) {
          const args = ['--scenario', 'burst', '--burst-jobs', String(n), '--configs', c];
          const row = await roundOnItsOwn(options.serverUrl, args, system);
          perJob.push(...((row.extra?.perJob as PerJobCost[] | undefined) ?? []));
          return row.median;
        }
        return options.fresh('burst', async (db) => {
          const r = await burst(db, n, BURST_CONFIGS[c] ?? {}, { analyze });
          perJob.push(r.cost);
          return r.jobsPerSec;
        });
      };
      const process = processOfRounds(options.ownProcess);
      return { system, measure, extra: { jobs: n, config: BURST_CONFIGS[c], analyze, perJob, process } };
    }),
  );
}
