/**
 * Scenario "limits": claim throughput of a queue under each flow-control
 * limit, beside the same queue without one. Like "burst": a warm supervisor,
 * then N no-op jobs in one statement (with concurrency keys where a variant
 * needs them), timed until all are done. The queue-wide variants claim
 * without prefetch, as such a limited queue must, beside the unlimited queue
 * without it; the per-key ones with the prefetch a user who sets none gets
 * (such a queue claims ahead by time, src/supervisor/claim/ahead.ts).
 */
import type { BenchDatabase } from './database.ts';
import { configuredSupervisor } from './harness.ts';
import { waitAllDone, WARM_UP } from './process.ts';
import { makeRow, type Row } from './report.ts';
import { enqueueMany } from '../queue/enqueue.ts';

interface LimitsVariant {
  queue: Record<string, unknown>;
  /** Distinct concurrency keys of the burst (0: none). */
  keys: number;
  /** Supervisors serving the queue (default 1). */
  supervisors?: number;
  /**
   * Each supervisor serves a queue of its own, with an equal share of the keys,
   * so that no key is walked by two (bench/limits_pair.ts --split).
   */
  splitKeys?: boolean;
}

const BASE = { concurrency: 50, jobsPerThread: 50, prefetch: 0 };
const PER_KEY = { concurrency: 50, jobsPerThread: 50 };

export const LIMITS_VARIANTS: Record<string, LimitsVariant> = {
  'no limit': { queue: BASE, keys: 0 },
  // The tuned unlimited queue (BURST_CONFIGS.tuned): what a limited queue is also compared with.
  'no limit, prefetch 2000': { queue: { ...BASE, prefetch: 2000 }, keys: 0 },
  'globalConcurrency 50': { queue: { ...BASE, globalConcurrency: 50 }, keys: 0 },
  // A queue limited per key alone claims ahead by time (claim/ahead.ts), with the
  // prefetch a user who sets none gets: measured as configured first.
  'perKeyConcurrency 1, 100 keys': { queue: { ...PER_KEY, perKeyConcurrency: 1 }, keys: 100 },
  'perKeyConcurrency 1, 1,000 keys': { queue: { ...PER_KEY, perKeyConcurrency: 1 }, keys: 1000 },
  'perKeyConcurrency 1, 10,000 keys': { queue: { ...PER_KEY, perKeyConcurrency: 1 }, keys: 10_000 },
  'globalConcurrency 50, two supervisors': { queue: { ...BASE, globalConcurrency: 50 }, keys: 0, supervisors: 2 },
  'perKeyConcurrency 1, 1,000 keys, two supervisors': {
    queue: { ...PER_KEY, perKeyConcurrency: 1 },
    keys: 1000,
    supervisors: 2,
  },
  'rateLimit 100,000/s (its cost)': { queue: { ...BASE, rateLimit: { count: 100_000, period: '1s' } }, keys: 0 },
  'rateLimit 2,000/s': { queue: { ...BASE, rateLimit: { count: 2000, period: '1s' } }, keys: 0 },
};

export async function limitsBurst(db: BenchDatabase, jobs: number, variant: LimitsVariant): Promise<number> {
  const count = variant.supervisors ?? 1;
  // The warm-up's jobs go to `default`, which every supervisor serves; split, each its own part too.
  const queues = (i: number) =>
    variant.splitKeys ? { default: variant.queue, [`part${i}`]: variant.queue } : { default: variant.queue };
  const supervisors = Array.from({ length: count }, (_, i) =>
    configuredSupervisor(db.url, { queues: queues(i), pool: { maxThreads: 1 } }),
  );
  await Promise.all(supervisors.map((s) => s.start()));
  try {
    await enqueueMany(
      db.pool,
      Array.from({ length: WARM_UP }, (_, i) => ({ kind: 'noop', payload: { i } })),
    );
    await waitAllDone(db, WARM_UP);
    // Key k(i % keys); split, key k goes to queue part(k % supervisors).
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload, concurrency_key, queue)
       SELECT 'noop', '{}', CASE WHEN $2::int > 0 THEN 'k' || (i % $2::int) END,
              CASE WHEN $3::bool THEN 'part' || (i % $2::int % $4::int) ELSE 'default' END
         FROM generate_series(1, $1::int) AS i`,
      [jobs, variant.keys, variant.splitKeys === true, count],
    );
    const t0 = performance.now();
    return jobs / (((await waitAllDone(db, WARM_UP + jobs)) - t0) / 1000);
  } finally {
    await Promise.all(supervisors.map((s) => s.stop()));
  }
}

/**
 * Issue 48's targets, each a variant's jobs/s over another's in the same
 * round: the limits against the unlimited queue without prefetch, two
 * supervisors against one.
 */
export const LIMITS_TARGETS: Record<string, { over: string; target: number }> = {
  'globalConcurrency 50': { over: 'no limit', target: 0.8 },
  'perKeyConcurrency 1, 100 keys': { over: 'no limit', target: 0.7 },
  'perKeyConcurrency 1, 1,000 keys': { over: 'no limit', target: 0.7 },
  'perKeyConcurrency 1, 10,000 keys': { over: 'no limit', target: 0.7 },
  'rateLimit 100,000/s (its cost)': { over: 'no limit', target: 0.9 },
  'globalConcurrency 50, two supervisors': { over: 'globalConcurrency 50', target: 1 },
  'perKeyConcurrency 1, 1,000 keys, two supervisors': { over: 'perKeyConcurrency 1, 1,000 keys', target: 1 },
};

/**
 * The ratio rows of a limits run (`rows`: the scenario's rows, systems
 * "jobvisor <variant>"): each target's ratio per round, since the rounds are
 * interleaved and one round's variants saw the same load, while the medians
 * of the variants come from different rounds (the unlimited queue's runs
 * spread 24–63 % between runs on a 2-core machine). Each also carries its
 * ratio to the tuned unlimited queue (prefetch 2000) of the same round. A
 * variant that failed or ran a different number of rounds gets no row.
 */
export function limitsRatios(scenario: string, rows: readonly Row[]): Row[] {
  const runs = new Map(rows.map((r) => [r.system.replace(/^jobvisor /, ''), r.values]));
  const prefetch = runs.get('no limit, prefetch 2000');
  return Object.entries(LIMITS_TARGETS).flatMap(([name, { over, target }]) => {
    const a = runs.get(name);
    const b = runs.get(over);
    if (!a || !b || a.length !== b.length || a.length === 0) return [];
    const perRound = (of: readonly number[]) => a.map((v, i) => v / (of[i] as number));
    const extra: Record<string, unknown> = { per: 'round', target, over };
    if (prefetch?.length === a.length) extra.overPrefetch = perRound(prefetch);
    return [makeRow(`${scenario}, per round`, `${name} ÷ ${over}`, '×', perRound(b), extra)];
  });
}
