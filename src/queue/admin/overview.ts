/**
 * The dashboard's Overview: per-queue counts, the oldest due job's age and
 * the live supervisors.
 *
 * Shape: one branch per status, each matching that status' partial index
 * (jobs_pending_idx, jobs_running_idx, jobs_failed_idx, jobs_blocked_idx) or, for jobs done in
 * the last hour, the per-minute rollup (finished_minutes, ../finished_rollup.ts)
 * for the minutes before its watermark and jobs_finished_idx from the watermark
 * on, so the cost follows the active rows and the minutes shown, never the
 * million done rows behind them (see stats.ts for the plan this avoids). Each
 * branch of jobs reads at most `cap` + 1 rows, so a table of 10 M pending jobs
 * costs what 250 k cost; counts past the cap are lower bounds, and `capped`
 * says so (the rolled-up minutes are exact sums, never capped). Sent unnamed,
 * so no plan made on a tiny table is reused on a large one.
 *
 * "The last hour" starts at the start of the minute that holds now − 1 hour
 * (60 to 61 minutes), the rollup's unit, so a count is the same before and
 * after its minutes are rolled up. A rolled-up minute is frozen: a job counted
 * done in it stays counted; the rows not yet rolled up count as they are now.
 */
import { rolledUpTo } from '../finished_rollup.ts';
import { pausedQueues } from '../pause.ts';
import { planned, run, type Now, type Store } from '../sql.ts';
import { listSupervisors } from './supervisors.ts';
import type { SupervisorRow } from './types.ts';

/** One queue's counts in the overview (the dashboard's front page). */
export interface QueueOverview {
  queue: string;
  /** Pending jobs, due or not. */
  pending: number;
  /** Pending jobs due now. */
  due: number;
  running: number;
  /** Dead letters (status failed). */
  dead: number;
  doneLastHour: number;
  /** Jobs waiting for their parents (workflows). */
  blocked: number;
  /** Paused cluster-wide (`jobvisor queues pause`): supervisors claim none of its jobs. */
  paused: boolean;
}

/** What overview() returns: each queue's counts, the oldest due age and the live supervisors. */
export interface Overview {
  queues: QueueOverview[];
  /** Seconds since the oldest due pending job of a queue that is not paused became due; null when none is due. */
  oldestDueAgeSeconds: number | null;
  supervisors: SupervisorRow[];
  /** True when some status had more rows than the cap: its counts are lower bounds. */
  capped: boolean;
}

/** A row of QUEUE_COUNTS: done jobs of the last hour read from jobs (capped) and from the rollup (exact), apart. */
type QueueCounts = Omit<QueueOverview, 'paused' | 'doneLastHour'> & { doneLive: number; doneRolled: number };

/** Rows each status branch of the overview reads at most, by default. */
export const OVERVIEW_CAP = 250_000;

// The time is written out in each branch, not taken from a CTE: the planner
// then knows it, and estimates the last hour's done rows as the few they are.
// So is the rollup's watermark ($3, read just before: see throughput.ts).
// Sequential scans priced out: with statistics from a tiny table, the pending
// branch read a grown table of a million rows whole to find its capped count
// (test/statements.test.ts).
const NOW = 'coalesce($1::timestamptz, now())';
const HOUR_AGO = `date_bin('1 minute', ${NOW} - interval '1 hour', timestamptz '1970-01-01 00:00:00+00')`;
const UPTO = `coalesce($3::timestamptz, '-infinity')`;
const QUEUE_COUNTS = planned(
  'admin_queue_counts',
  `
WITH counts AS (
  SELECT queue, count(*) AS pending, count(*) FILTER (WHERE run_at <= ${NOW}) AS due, 0 AS running, 0 AS dead, 0 AS done,
         0 AS rolled, 0 AS blocked
    FROM (SELECT queue, run_at FROM jobvisor.jobs WHERE status = 'pending' LIMIT $2) AS p GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, count(*), 0, 0, 0, 0
    FROM (SELECT queue FROM jobvisor.jobs WHERE status = 'running' LIMIT $2) AS r GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, count(*), 0, 0, 0
    FROM (SELECT queue FROM jobvisor.jobs WHERE status = 'failed' LIMIT $2) AS f GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, 0, count(*), 0, 0
    FROM (SELECT queue FROM jobvisor.jobs
           WHERE status = 'done' AND finished_at >= ${HOUR_AGO} AND finished_at >= ${UPTO} LIMIT $2) AS d
   GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, 0, 0, sum(done), 0
    FROM jobvisor.finished_minutes WHERE minute >= ${HOUR_AGO} AND minute < ${UPTO} GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, 0, 0, 0, count(*)
    FROM (SELECT queue FROM jobvisor.jobs WHERE status = 'blocked' LIMIT $2) AS b GROUP BY queue
)
SELECT queue, sum(pending)::int AS pending, sum(due)::int AS due, sum(running)::int AS running,
       sum(dead)::int AS dead, sum(done)::int AS "doneLive", sum(rolled)::int AS "doneRolled",
       sum(blocked)::int AS blocked
  FROM counts
 GROUP BY queue
 ORDER BY queue`,
  'throughIndexes',
);

// The oldest due job without reading every pending row: jobs_pending_idx is
// ordered (queue, priority, run_at), so the first entry of each (queue,
// priority) pair holds that pair's earliest run_at. A recursive skip scan
// visits one index entry per pair (a handful), where min(run_at) over the
// index read all of them (15 ms for 100 k pending, 1.5 s for 10 M).
// '-infinity' run_at counts as due since 1970 (see stats.ts). A paused
// queue's jobs wait on purpose: they are left out (one probe of queues' key).
const OLDEST_DUE = planned(
  'admin_oldest_due',
  `
WITH RECURSIVE pairs AS (
  (SELECT queue, priority FROM jobvisor.jobs WHERE status = 'pending' ORDER BY queue, priority LIMIT 1)
  UNION ALL
  SELECT n.queue, n.priority
    FROM pairs, LATERAL (SELECT queue, priority FROM jobvisor.jobs
                          WHERE status = 'pending' AND (queue, priority) > (pairs.queue, pairs.priority)
                          ORDER BY queue, priority LIMIT 1) AS n
)
SELECT extract(epoch FROM ${NOW} - min(greatest(first.run_at, timestamptz '1970-01-01 00:00:00+00')))::float8 AS s
  FROM pairs, LATERAL (SELECT run_at FROM jobvisor.jobs
                        WHERE status = 'pending' AND queue = pairs.queue AND priority = pairs.priority
                        ORDER BY run_at LIMIT 1) AS first
 WHERE first.run_at <= ${NOW}
   AND NOT EXISTS (SELECT 1 FROM jobvisor.queues AS q WHERE q.queue = pairs.queue AND q.paused)`,
);

/**
 * The Overview page's data. `now` pins the clock (tests); default: the
 * database's. `cap`: rows read per status at most (default OVERVIEW_CAP).
 */
export async function overview(store: Store, now: Now = null, options: { cap?: number } = {}): Promise<Overview> {
  const cap = Math.max(1, Math.floor(options.cap ?? OVERVIEW_CAP));
  // One after another, not together: the store may be one client (a
  // transaction, a request's connection), where pg 8 deprecates queued queries.
  const rows = await run<QueueCounts>(store, QUEUE_COUNTS, [now, cap + 1, await rolledUpTo(store)]);
  const counted = rows.map(({ doneLive, doneRolled, ...q }) => ({ ...q, doneLastHour: doneLive + doneRolled }));
  const paused = await pausedQueues(store);
  // A paused queue is listed even when it holds no jobs: the pause is what an operator looks for.
  const idle = [...paused]
    .filter((queue) => !counted.some((q) => q.queue === queue))
    .map((queue) => ({ queue, pending: 0, due: 0, running: 0, dead: 0, doneLastHour: 0, blocked: 0 }));
  const queues = [...counted, ...idle]
    .map((q) => ({ ...q, paused: paused.has(q.queue) }))
    .sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
  const oldest = await run<{ s: number | null }>(store, OLDEST_DUE, [now]);
  const supervisors = await listSupervisors(store, now);
  const total = (key: 'pending' | 'running' | 'dead' | 'blocked') => queues.reduce((n, q) => n + q[key], 0);
  const capped =
    (['pending', 'running', 'dead', 'blocked'] as const).some((k) => total(k) > cap) ||
    rows.reduce((n, q) => n + q.doneLive, 0) > cap;
  return { queues, oldestDueAgeSeconds: oldest[0]?.s ?? null, supervisors, capped };
}
