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
import { claimJobs } from '../queue/claim.ts';
import { completeJobs } from '../queue/complete.ts';
import { enqueueMany } from '../queue/enqueue.ts';
import type { Store } from '../queue/sql.ts';
import { countActiveJobs, oldestDueByQueue } from '../queue/stats.ts';
import { rollUpRound } from '../supervisor/maintenance.ts';
import { within } from '../within.ts';
import { BURST_CONFIGS } from './burst.ts';
import type { BenchDatabase } from './database.ts';
import { BENCH_QUEUE, configuredSupervisor, jobCounter } from './harness.ts';
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

const CHUNK = 500_000;
const BACKLOG = 20_000;
const BATCH = 50;
const HISTORY_OWNER = 'history';
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

/**
 * Adds `rows` done jobs of the default queue that finished over the last 3
 * days, oldest id first. Each chunk lives the life a job does, as three
 * statements: inserted pending, claimed (running, the claim's columns set),
 * done. So the pages hold what a supervisor leaves on them: the done
 * versions beside the dead pending and running ones, which VACUUM then
 * frees. Inserting the rows as done instead packed each page to the
 * fillfactor with a few hundred bytes over, just enough for one more small
 * row: a burst's 20,000 inserts then went one to a page, each a page image
 * after the checkpoint (5,000 bytes of WAL per job instead of 1,000), which
 * no supervisor's table looks like.
 */
export async function addHistory(db: BenchDatabase, rows: number): Promise<void> {
  for (let from = 0; from < rows; from += CHUNK) {
    const { rows: range } = await db.pool.query<{ lo: string; hi: string }>(
      `WITH added AS (
         INSERT INTO jobvisor.jobs (kind, payload, run_at, created_at)
         SELECT 'noop', jsonb_build_object('i', g), f - interval '2 s', f - interval '2 s'
           FROM (SELECT g, now() - (1 - g::float8 / $2::int) * interval '3 days' AS f
                   FROM generate_series($1::int + 1, $1::int + $3::int) AS g) AS s
         RETURNING id)
       SELECT min(id) AS lo, max(id) AS hi FROM added`,
      [from, rows, Math.min(CHUNK, rows - from)],
    );
    const { lo, hi } = range[0] as { lo: string; hi: string };
    await db.pool.query(
      `UPDATE jobvisor.jobs
          SET status = 'running', attempts = 1, lease_token = nextval('jobvisor.lease_token_seq'),
              locked_by = $3, locked_until = created_at + interval '1 min', started_at = created_at + interval '1 s'
        WHERE id BETWEEN $1 AND $2`,
      [lo, hi, HISTORY_OWNER],
    );
    await db.pool.query(
      `UPDATE jobvisor.jobs SET status = 'done', locked_until = NULL, finished_at = created_at + interval '2 s', result = NULL
        WHERE id BETWEEN $1 AND $2`,
      [lo, hi],
    );
    // What autovacuum does while a history builds up over days (a chunk leaves a million dead
    // row versions, past its threshold): without it, the dead entries of every chunk stayed in
    // jobs_pending_idx and jobs_running_idx, 30,313 pages of pending index for 20,000 live
    // entries at 5 M, and the planner priced the pending count by that size.
    await db.pool.query('VACUUM jobvisor.jobs');
  }
}

/** Leaves the history and a fresh backlog: what the last depth's claims and bursts wrote is deleted. */
async function resetWork(db: BenchDatabase): Promise<void> {
  await db.pool.query('DELETE FROM jobvisor.jobs WHERE locked_by IS DISTINCT FROM $1', [HISTORY_OWNER]);
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (queue, kind, payload) SELECT $1, 'noop', jsonb_build_object('i', g) FROM generate_series(1, $2::int) AS g`,
    [BENCH_QUEUE, BACKLOG],
  );
  await db.pool.query('VACUUM ANALYZE jobvisor.jobs');
}

/**
 * Counts the last day of the history into finished_minutes with the rollup a
 * supervisor's cleanup runs, and returns how long it took in seconds. The
 * history arrives with past finish times, behind the watermark the previous
 * depth's rollup moved, so the watermark goes back a day first (the minutes
 * counted before go too): the state a supervisor would have left.
 */
async function rollUpDay(db: BenchDatabase): Promise<number> {
  const store: Store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query('DELETE FROM jobvisor.finished_minutes');
  await db.pool.query(
    `UPDATE jobvisor.finished_rollup SET upto = date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00') - interval '1 day'`,
  );
  const t0 = performance.now();
  const state = await rollUpRound(store, Number.POSITIVE_INFINITY);
  if (state !== 'done') throw new Error(`the rollup did not catch up (${state})`);
  return (performance.now() - t0) / 1000;
}

/** CHECKPOINT, or a clear error when the benchmark's role may not (superuser or pg_checkpoint). */
async function checkpoint(db: BenchDatabase): Promise<void> {
  try {
    await db.pool.query('CHECKPOINT');
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err;
    throw new Error(
      'the history scenario runs CHECKPOINT before each depth, so every depth starts with nothing left to write: ' +
        "connect as a superuser or a role granted pg_checkpoint (PostgreSQL 15's GRANT pg_checkpoint TO …)",
      { cause: err },
    );
  }
}

const READS = ['overview', 'stats', 'metrics'] as const;
/**
 * Timed reads of each kind per depth, each beside the twin's: a read takes
 * 10-20 ms on a 2-core host that drifts by tens of percent within seconds,
 * and the medians of 5 moved by 0.3 of the ratio between runs.
 */
const READ_REPS = 31;
type ReadOp = (typeof READS)[number];
type ReadTimes = Record<ReadOp, number[]>;
/** What the twin is timed on: everything (the reads, the claim, the completion and the burst). */
const TWINNED = [...READS, 'claim', 'completion', 'burst'] as const;
type TwinTimes = Record<(typeof TWINNED)[number], number[]>;

/** The operator's reads of one database. */
function readsOf(store: Store, admin: AdminReads, parts: OverviewParts): Record<ReadOp, () => Promise<unknown>> {
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
async function timeReads(
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
async function claimsAndCompletions(store: Store, rounds: number, twin?: Store) {
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

type OverviewParts = Record<'overview' | 'hour' | 'day', number[]>;

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

/** Blocks this database read from outside shared buffers (the OS cache or the disk), so far. */
async function blocksRead(db: BenchDatabase): Promise<number> {
  const { rows } = await db.pool.query<{ n: string }>(
    'SELECT blks_read AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0]?.n ?? 0);
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
