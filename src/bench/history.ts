/**
 * Scenario "history": with D finished rows kept, does each of the hot paths
 * stay within 1.2× of the same on an empty history? One database's history
 * grows through the depths in turn (0, then 5 M, 10 M, 20 M by default): done
 * rows that finished over the last 3 days, in id order as jobs finish, added
 * 500,000 at a time through a job's life (inserted, claimed, done: see
 * addHistory), then VACUUM ANALYZE, then the per-minute rollup
 * of the last day (src/queue/finished_rollup.ts), as a supervisor's
 * maintenance would have counted those rows within a minute of their
 * finishing, then a CHECKPOINT: a history months old is written out long
 * before anyone measures it, and adding millions of rows in a minute leaves
 * gigabytes to write that the checkpointer would otherwise be writing (and
 * every page first touched after it imaged in full) during the timings; the
 * empty depth takes the same CHECKPOINT. At each depth, with a backlog
 * of 20,000 pending jobs in a queue of their own, the medians of:
 *   - the dashboard's Overview reads, `jobvisor stats`' reads and one /metrics
 *     scrape's database reads (one untimed read first);
 *   - one claim of 50 and, timed apart, the fenced completion of those 50;
 *   - a burst of N no-op jobs in one statement through a warmed in-process
 *     supervisor of the tuned configuration (BURST_CONFIGS).
 * From the first depth on, each read, claim and completion is also timed on a
 * second database that stays empty (its backlog only, renewed at each depth),
 * right after the same one here, and each burst alternates with one there,
 * and reported beside it (`emptyNow`,
 * `ratioToEmptyNow`): the ratio to depth 0 compares figures minutes apart,
 * across a build of millions of rows, and the one to the twin compares them
 * under the same server state.
 * The reads run first and the burst last, so what the claims and bursts leave
 * done is not yet there when the reads are timed; it is deleted before the
 * next depth, so every depth holds exactly its D finished rows.
 */
import { enqueueMany } from '../queue/enqueue.ts';
import type { Store } from '../queue/sql.ts';
import { within } from '../within.ts';
import { BURST_CONFIGS } from './burst.ts';
import type { BenchDatabase } from './database.ts';
import { configuredSupervisor, jobCounter } from './harness.ts';
import { startPgCost, type PerJobCost } from './pg_cost.ts';
import {
  depthLabel,
  depthSystem,
  extrapolatedRows,
  historySummary,
  HISTORY_TARGET,
  ratioToEmpty,
} from './history_report.ts';
import { WARM_UP } from './process.ts';
import { makeRow, type Row } from './report.ts';
import { median } from './stats.ts';
import { addHistory, BACKLOG, blocksRead, checkpoint, resetWork, rollUpDay } from './history_data.ts';
import {
  BATCH,
  claimsAndCompletions,
  READ_REPS,
  readsOf,
  timeReads,
  TWINNED,
  type AdminReads,
  type OverviewParts,
  type TwinTimes,
} from './history_timings.ts';

export { addHistory } from './history_data.ts';
export type { AdminReads } from './history_timings.ts';

export interface HistoryBench {
  depths: number[];
  /** Jobs per burst. */
  jobs: number;
  /**
   * A second database that stays empty (its backlog and rollup only): at each
   * depth everything is timed on it too, each read, claim and completion right
   * after the same one of the deep database and the bursts alternating, so
   * both meet the server in the same state.
   */
  twin?: BenchDatabase;
  /** Bursts per depth; the reads run at least 5 times, the claims at least 50. */
  runs: number;
  admin: AdminReads;
  emit(row: Row): void;
  /** Progress and the summary on stderr (not with --json). */
  say?(text: string): void;
}

/** The burst's supervisor deletes nothing: each depth keeps exactly its rows. */
const KEEP_HISTORY = { interval: '1h', retention: '3650d', failedRetention: '3650d' };

const OPERATIONS = {
  burst: { unit: 'jobs/s' },
  claim: { unit: 'ms' },
  completion: { unit: 'ms' },
  overview: { unit: 'ms' },
  stats: { unit: 'ms' },
  metrics: { unit: 'ms' },
} as const;
type Operation = keyof typeof OPERATIONS;

function scenarioOf(op: Operation, jobs: number): string {
  return {
    burst: `history: burst ${jobs}`,
    claim: `history: claim of ${BATCH}`,
    completion: `history: completion of ${BATCH}`,
    overview: 'history: dashboard overview reads',
    stats: 'history: stats reads',
    metrics: 'history: /metrics database reads',
  }[op];
}

type BurstCost = PerJobCost & { blocksReadPerJob: number };

/**
 * `reps` bursts of `jobs` on each database, through one warmed supervisor of
 * the tuned configuration each, in jobs/s, and what each cost PostgreSQL per
 * job (WAL, CPU, and blocks read from outside shared buffers:
 * pg_stat_database is updated when a backend's transaction ends, so it lags
 * by a statement or two). With two databases (the deep one and its twin) the
 * bursts alternate, one of each per round, so both meet the host in the same
 * state; the other database's supervisor waits idle meanwhile.
 */
async function bursts(
  dbs: BenchDatabase[],
  jobs: number,
  reps: number,
): Promise<Array<{ rates: number[]; perJob: BurstCost[] }>> {
  const sides = dbs.map((db) => {
    const supervisor = configuredSupervisor(db.url, { ...BURST_CONFIGS.tuned, cleanup: KEEP_HISTORY });
    return {
      db,
      supervisor,
      done: jobCounter(supervisor, 'job:completed'),
      rates: [] as number[],
      perJob: [] as BurstCost[],
    };
  });
  try {
    for (const { db, supervisor, done } of sides) {
      await supervisor.start();
      await enqueueMany(
        db.pool,
        Array.from({ length: WARM_UP }, (_, i) => ({ kind: 'noop', payload: { i } })),
      );
      await done.reached(WARM_UP);
    }
    for (let r = 0; r < reps; r++)
      for (const { db, done, rates, perJob } of sides) {
        const target = done.count + jobs;
        const cost = await startPgCost(db.pool);
        const readBefore = await blocksRead(db);
        await db.pool.query(
          `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, $1::int)`,
          [jobs],
        );
        const t0 = performance.now();
        // A job that failed would never be counted: 10 minutes is far past any burst's time.
        if (!(await within(done.reached(target), 600_000)))
          throw new Error(`${target - done.count} of the burst's jobs not done after 10 minutes`);
        rates.push(jobs / ((performance.now() - t0) / 1000));
        const blocksReadPerJob = Math.round((((await blocksRead(db)) - readBefore) / jobs) * 1000) / 1000;
        perJob.push({ ...(await cost.stop(jobs)), blocksReadPerJob });
      }
    return sides.map(({ rates, perJob }) => ({ rates, perJob }));
  } finally {
    await Promise.all(sides.map(({ supervisor }) => supervisor.stop()));
  }
}

async function measure(
  db: BenchDatabase,
  b: HistoryBench,
): Promise<
  Record<Operation, number[]> & {
    extra: {
      parts: Record<string, number>;
      perJob: BurstCost[];
      twin?: TwinTimes;
      twinPerJob?: BurstCost[];
    };
  }
> {
  const store: Store = { db: db.pool, schema: 'jobvisor' };
  const parts: OverviewParts = { overview: [], hour: [], day: [] };
  const twinStore: Store | undefined = b.twin && { db: b.twin.pool, schema: 'jobvisor' };
  const reads = await timeReads(
    Math.max(READ_REPS, b.runs),
    readsOf(store, b.admin, parts),
    twinStore && readsOf(twinStore, b.admin, { overview: [], hour: [], day: [] }),
  );
  const { overview, stats, metrics } = reads.mine;
  const claims = await claimsAndCompletions(store, Math.max(50, b.runs), twinStore);
  const { claim, completion } = claims.mine;
  const [mine, theirs] = await bursts(b.twin ? [db, b.twin] : [db], b.jobs, b.runs);
  const { rates: burst, perJob } = mine ?? { rates: [], perJob: [] };
  const twin = reads.twin && claims.twin && theirs && { ...reads.twin, ...claims.twin, burst: theirs.rates };
  const part = (values: number[]) => median(values.slice(1));
  // Each read's own time from the page's start: which of the three the page waits for.
  const overviewParts = {
    'overview()': part(parts.overview),
    'hour chart': part(parts.hour),
    'day chart': part(parts.day),
  };
  return {
    burst,
    claim,
    completion,
    overview,
    stats,
    metrics,
    extra: { parts: overviewParts, perJob, ...(twin && { twin, twinPerJob: theirs?.perJob }) },
  };
}

export async function runHistory(db: BenchDatabase, b: HistoryBench): Promise<void> {
  const rows = new Map<Operation, Row[]>(Object.keys(OPERATIONS).map((op) => [op as Operation, []]));
  let kept = 0;
  if (b.twin) await rollUpDay(b.twin);
  for (const depth of b.depths) {
    const t0 = performance.now();
    b.say?.(`  history: ${depthLabel(depth)} done rows (adding ${(depth - kept).toLocaleString('en-US')})\n`);
    await addHistory(db, depth - kept);
    kept = depth;
    await resetWork(db);
    // The twin's claims of the depth before left done rows: it starts each depth empty again.
    if (b.twin) await resetWork(b.twin);
    const fillSeconds = (performance.now() - t0) / 1000;
    const rollupSeconds = await rollUpDay(db);
    await checkpoint(db);
    b.say?.(`  history: the last day rolled up per minute in ${rollupSeconds.toFixed(1)} s\n`);
    // At depth 0 both databases are empty: the twin is read from the first depth on.
    const { extra, ...values } = await measure(db, depth > 0 ? b : { ...b, twin: undefined });
    if (extra.twin) {
      const side = TWINNED.map((op) => {
        const now = median(extra.twin?.[op] ?? []);
        const { unit } = OPERATIONS[op];
        const shown = unit === 'ms' ? now.toFixed(2) : Math.round(now).toLocaleString('en-US');
        return `${op} ${shown} ${unit} (${ratioToEmpty(median(values[op]), now, unit).toFixed(2)})`;
      });
      b.say?.(`  history: the same on an empty database, each right after: ${side.join(', ')}\n`);
    }
    for (const op of Object.keys(OPERATIONS) as Operation[]) {
      const { unit } = OPERATIONS[op];
      const empty = rows.get(op)?.[0]?.median ?? median(values[op]);
      const ratio = ratioToEmpty(median(values[op]), empty, unit);
      const twin = extra.twin?.[op];
      const emptyNow = twin && {
        emptyNow: median(twin),
        ratioToEmptyNow: ratioToEmpty(median(values[op]), median(twin), unit),
      };
      const row = makeRow(scenarioOf(op, b.jobs), depthSystem(depth), unit, values[op], {
        depth,
        ratioToEmpty: ratio,
        withinTarget: ratio <= HISTORY_TARGET,
        fillSeconds,
        ...emptyNow,
        ...(op === 'overview' ? { parts: extra.parts, rollupSeconds } : {}),
        ...(op === 'burst'
          ? {
              jobs: b.jobs,
              config: BURST_CONFIGS.tuned,
              backlog: BACKLOG,
              perJob: extra.perJob,
              twinPerJob: extra.twinPerJob,
            }
          : { backlog: BACKLOG }),
      });
      rows.get(op)?.push(row);
      b.emit(row);
    }
  }
  const operations = (Object.keys(OPERATIONS) as Operation[]).map((op) => {
    const scenario = scenarioOf(op, b.jobs);
    const { unit } = OPERATIONS[op];
    const fits = extrapolatedRows(scenario, unit, rows.get(op) ?? []);
    for (const row of fits) b.emit(row);
    return { scenario, unit, rows: [...(rows.get(op) ?? []), ...fits] };
  });
  b.say?.(historySummary(operations));
}
