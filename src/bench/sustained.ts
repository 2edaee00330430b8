/**
 * Scenario "sustained": one supervisor at full speed for a while (default
 * 10 minutes) while a producer keeps a backlog. Without `--retention` done
 * rows are kept (no cleanup); with it, cleanup runs every 10 s and deletes
 * what is older.
 *
 * The run is cut into fifteen windows, or into minutes when it is longer than
 * fifteen of them (a 30-minute run: 30 windows). For each: throughput, the arrival
 * rate (jobs enqueued), the cleanup rate (rows deleted), the claim
 * statement's p99 (timed on the supervisor's pool), and the table's size with
 * its indexes and TOAST at the window's end. Summaries: throughput of the last
 * fifth against the first, size at the end against the size at one third,
 * and the rate above which the table grows: cleanup's rate while it deletes
 * (rows per second inside its rounds, from the spacing of full batches) times
 * the share of the time a round with a backlog deletes (its budget, half the
 * interval, then a tenth of the interval's pause: src/supervisor/loops/maintenance.ts).
 */
import type pg from 'pg';
import { enqueueMany } from '../queue/enqueue.ts';
import type { Supervisor } from '../supervisor/supervisor.ts';
import type { BenchDatabase } from './database.ts';
import { inProcessSupervisor, noopJobs, type QueueShape } from './harness.ts';
import { WARM_UP } from './process.ts';
import { median } from './stats.ts';

const MIN_WINDOWS = 15;
const FIVE_MINUTES_MS = 300_000;
const CLEANUP_INTERVAL_MS = 10_000;

interface Window {
  jobsPerSec: number;
  arrivalsPerSec: number;
  cleanedPerSec: number;
  claimP99Ms: number;
  tableMb: number;
}

export async function sustained(db: BenchDatabase, durationMs: number, shape: QueueShape, retentionMs?: number) {
  const cleanup = retentionMs === undefined ? undefined : { interval: CLEANUP_INTERVAL_MS, retention: retentionMs };
  const { supervisor, completions } = inProcessSupervisor(
    db.url,
    shape,
    cleanup && { cleanup: { interval: `${cleanup.interval}ms`, retention: `${cleanup.retention}ms` } },
  );
  const claims = timeClaims(supervisor);
  await supervisor.start();
  const warm = completions(WARM_UP);
  await enqueueMany(db.pool, noopJobs(WARM_UP));
  await warm;
  let completed = 0;
  let cleaned = 0;
  const batches: Array<{ at: number; rows: number }> = [];
  supervisor.events.on('job:completed', ({ jobs }) => (completed += jobs.length));
  supervisor.events.on('jobs:cleaned', ({ rows }) => {
    const n = rows.reduce((sum, r) => sum + r.count, 0);
    cleaned += n;
    batches.push({ at: performance.now(), rows: n });
  });
  const windows: Window[] = [];
  const rss: number[] = [];
  const WINDOWS = Math.max(MIN_WINDOWS, Math.round(durationMs / 60_000));
  const windowMs = durationMs / WINDOWS;
  let enqueued = 0;
  const batch = 5000;
  const started = performance.now();
  let mark = { at: started, completed: 0, enqueued: 0, cleaned: 0 };
  const closeWindow = async (now: number) => {
    const perSec = (n: number) => (n * 1000) / (now - mark.at);
    windows.push({
      jobsPerSec: Math.round(perSec(completed - mark.completed)),
      arrivalsPerSec: Math.round(perSec(enqueued - mark.enqueued)),
      cleanedPerSec: Math.round(perSec(cleaned - mark.cleaned)),
      claimP99Ms: round2(claims.takeP99()),
      tableMb: await tableMb(db.pool),
    });
    rss.push(process.memoryUsage().rss);
    mark = { at: now, completed, enqueued, cleaned };
  };
  try {
    while (performance.now() - started < durationMs) {
      // Keep 2–4 batches of backlog so the supervisor never starves.
      if (enqueued - completed < 2 * batch) {
        await enqueueMany(db.pool, noopJobs(batch));
        enqueued += batch;
      } else {
        await new Promise((r) => setTimeout(r, 5));
      }
      if (performance.now() - mark.at >= windowMs) await closeWindow(performance.now());
    }
    // The last window, when the loop ended short of it (the time the last checks took).
    if (windows.length < WINDOWS && performance.now() - mark.at >= windowMs / 2) await closeWindow(performance.now());
  } finally {
    await supervisor.stop();
  }
  const { rows } = await db.pool.query<
    Record<string, number>
  >(`SELECT n_dead_tup::int AS dead, n_live_tup::int AS live, autovacuum_count::int AS autovacuums,
            pg_relation_size(relid) / 1048576 AS "heapMb", pg_indexes_size(relid) / 1048576 AS "indexesMb"
       FROM pg_stat_user_tables WHERE relname = 'jobs'`);
  const rates = windows.map((w) => w.jobsPerSec);
  const fifth = Math.max(1, Math.floor(windows.length / 5));
  const third = windows[Math.max(0, Math.round(windows.length / 3) - 1)];
  const last = windows[windows.length - 1];
  const capacity = cleanup && cleanupCapacity(batches);
  const duty = cleanup && cleanup.interval / 2 / (cleanup.interval / 2 + cleanup.interval / 10);
  const mb = (bytes: number) => Math.round(bytes / 1048576);
  // The first and last five minutes (at least one window each), for runs long enough to have them.
  const five = Math.max(1, Math.round(FIVE_MINUTES_MS / windowMs));
  const p99s = windows.map((w) => w.claimP99Ms);
  return {
    completed,
    cleaned,
    windows,
    jobsPerSec: rates,
    lastFifthOverFirst: round2(median(rates.slice(-fifth)) / Math.max(1, median(rates.slice(0, fifth)))),
    sizeAtThirdMb: third?.tableMb,
    sizeAtEndMb: last?.tableMb,
    sizeEndOverThird: third && last ? round2(last.tableMb / Math.max(1, third.tableMb)) : undefined,
    claimP99Ms: p99s,
    windowMs: Math.round(windowMs),
    lastFiveMinOverFirst: round2(median(rates.slice(-five)) / Math.max(1, median(rates.slice(0, five)))),
    claimP99FirstFiveMinMs: round2(median(p99s.slice(0, five))),
    claimP99LastFiveMinMs: round2(median(p99s.slice(-five))),
    ...(cleanup && {
      retentionMs: cleanup.retention,
      cleanupIntervalMs: cleanup.interval,
      cleanupRowsPerSecWhileDeleting: capacity,
      tableGrowsAboveJobsPerSec: capacity !== undefined && duty !== undefined ? Math.round(capacity * duty) : undefined,
    }),
    rssStartMb: mb(rss[0] ?? 0),
    rssEndMb: mb(rss[rss.length - 1] ?? 0),
    table: rows[0],
  };
}

/**
 * Times the claim statement on the supervisor's own pool (the text of every
 * statement names it: src/queue/sql.ts). `takeP99()` gives the p99 of the
 * claims since the last call.
 */
function timeClaims(supervisor: Supervisor) {
  const pool = supervisor.store.db as pg.Pool;
  const query = pool.query.bind(pool) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
  let samples: number[] = [];
  (pool as { query: unknown }).query = (config: pg.QueryConfig, ...rest: unknown[]) => {
    if (rest.length > 0 || typeof config?.text !== 'string' || !config.text.startsWith('/* jobvisor_claim'))
      return (query as (...a: unknown[]) => unknown)(config, ...rest);
    const t0 = performance.now();
    return query(config).finally(() => samples.push(performance.now() - t0));
  };
  return {
    takeP99(): number {
      const sorted = samples.sort((a, b) => a - b);
      samples = [];
      return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0;
    },
  };
}

/** Rows per second inside cleanup rounds: full batches that followed another batch of the same round. */
function cleanupCapacity(batches: Array<{ at: number; rows: number }>): number | undefined {
  const full = Math.max(...batches.map((b) => b.rows), 0);
  const gaps: number[] = [];
  for (let i = 1; i < batches.length; i++) {
    const gap = (batches[i]?.at ?? 0) - (batches[i - 1]?.at ?? 0);
    if (batches[i]?.rows === full && batches[i - 1]?.rows === full && gap < 2000) gaps.push(gap);
  }
  return gaps.length > 0 ? Math.round((full * 1000) / median(gaps)) : undefined;
}

async function tableMb(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ mb: number }>(
    `SELECT round(pg_total_relation_size('jobvisor.jobs') / 1048576.0, 1)::float8 AS mb`,
  );
  return rows[0]?.mb ?? 0;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
