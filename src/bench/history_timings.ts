/**
 * The history scenario's timed operations (history.ts): the operator's reads
 * (the dashboard's Overview, `jobvisor stats`, a /metrics scrape's database
 * reads) and a claim of BATCH with its fenced completion, each beside the
 * same on the empty twin when there is one.
 */
import { claimJobs } from '../queue/claim.ts';
import { completeJobs } from '../queue/complete.ts';
import type { Store } from '../queue/sql.ts';
import { countActiveJobs, oldestDueByQueue } from '../queue/stats.ts';
import { BENCH_QUEUE } from './harness.ts';

/** Jobs per timed claim and completion. */
export const BATCH = 50;

/**
 * The operator's reads, handed in by the CLI: the bench may not import the
 * admin API (scripts/eslint-layers.js), and the CLI is what joins the two.
 */
export interface AdminReads {
  /** src/queue/admin's overview(), which the dashboard's Overview page reads on every request. */
  overview(store: Store): Promise<unknown>;
  /** src/queue/admin's throughput(), the Overview page's two charts (cached 15 s and 60 s there). */
  throughput(store: Store, range: 'hour' | 'day'): Promise<unknown>;
  /** What `jobvisor stats` reads (src/cli/stats.ts). */
  stats(store: Store): Promise<unknown>;
}

const READS = ['overview', 'stats', 'metrics'] as const;
/**
 * Timed reads of each kind per depth, each beside the twin's: a read takes
 * 10-20 ms on a 2-core host that drifts by tens of percent within seconds,
 * and the medians of 5 moved by 0.3 of the ratio between runs.
 */
export const READ_REPS = 31;
type ReadOp = (typeof READS)[number];
export type ReadTimes = Record<ReadOp, number[]>;
/** What the twin is timed on: everything (the reads, the claim, the completion and the burst). */
export const TWINNED = [...READS, 'claim', 'completion', 'burst'] as const;
export type TwinTimes = Record<(typeof TWINNED)[number], number[]>;

/** The operator's reads of one database. */
export function readsOf(store: Store, admin: AdminReads, parts: OverviewParts): Record<ReadOp, () => Promise<unknown>> {
  return {
    overview: () => overviewPage(store, admin, parts),
    stats: () => admin.stats(store),
    // The database gauges' two reads, both due, at once, as a scrape starts them (src/metrics/database_gauges.ts).
    metrics: () => Promise.all([oldestDueByQueue(store), countActiveJobs(store)]),
  };
}

async function lap(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/**
 * Each read `reps` times in ms, after one untimed call (the first read after
 * VACUUM meets cold caches); with a twin, each of its reads right after the
 * same read here.
 */
export async function timeReads(
  reps: number,
  mine: Record<ReadOp, () => Promise<unknown>>,
  twin?: Record<ReadOp, () => Promise<unknown>>,
): Promise<{ mine: ReadTimes; twin?: ReadTimes }> {
  const times = () => ({ overview: [], stats: [], metrics: [] }) as ReadTimes;
  const out = { mine: times(), twin: twin && times() };
  for (const op of READS) {
    await mine[op]();
    await twin?.[op]();
    for (let i = 0; i < reps; i++) {
      out.mine[op].push(await lap(mine[op]));
      if (twin) out.twin?.[op].push(await lap(twin[op]));
    }
  }
  return out;
}

/** One claim of BATCH from the backlog and its fenced completion, timed apart (ms). */
async function claimAndComplete(store: Store, round: number): Promise<{ claim: number; completion: number }> {
  const t0 = performance.now();
  const jobs = await claimJobs(store, { owner: 'bench', queue: BENCH_QUEUE, limit: BATCH, leaseMs: 60_000 });
  const t1 = performance.now();
  const fenced = await completeJobs(
    store,
    'bench',
    jobs.map((j) => j.id),
    jobs.map((j) => j.token),
  );
  const t2 = performance.now();
  if (jobs.length < BATCH) throw new Error(`the backlog ran out after ${round} claims`);
  if (fenced.size > 0) throw new Error(`${fenced.size} completions were fenced off`);
  return { claim: t1 - t0, completion: t2 - t1 };
}

/** Claims and completions of BATCH, `rounds` times; with a twin, each of its own right after. */
export async function claimsAndCompletions(store: Store, rounds: number, twin?: Store) {
  const times = () => ({ claim: [] as number[], completion: [] as number[] });
  const out = { mine: times(), twin: twin && times() };
  for (let i = 0; i <= rounds; i++) {
    const mine = await claimAndComplete(store, i);
    const theirs = twin && (await claimAndComplete(twin, i));
    // The first round warms the connection and the plans, like the reads' untimed call.
    if (i === 0) continue;
    out.mine.claim.push(mine.claim);
    out.mine.completion.push(mine.completion);
    out.twin?.claim.push(theirs?.claim ?? Number.NaN);
    out.twin?.completion.push(theirs?.completion ?? Number.NaN);
  }
  return out;
}

export type OverviewParts = Record<'overview' | 'hour' | 'day', number[]>;

/** The Overview page's data, as src/dashboard/routes/pages.ts reads it with cold chart caches: all three at once. */
async function overviewPage(store: Store, admin: AdminReads, parts: OverviewParts) {
  const t0 = performance.now();
  const lap = (part: keyof typeof parts) => () => parts[part].push(performance.now() - t0);
  await Promise.all([
    admin.overview(store).then(lap('overview')),
    admin.throughput(store, 'hour').then(lap('hour')),
    admin.throughput(store, 'day').then(lap('day')),
  ]);
}
