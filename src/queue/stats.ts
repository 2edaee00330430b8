/**
 * Counts for `jobvisor stats` and the database gauges.
 *
 * `countActiveJobs` reads only pending, running, failed, blocked and waiting rows through
 * their partial indexes: cheap however many done rows the table keeps.
 * `countRecentlyFinished` adds the done and cancelled jobs of the last hour
 * (the per-minute rollup, and jobs_finished_idx past its watermark), so its
 * cost follows the minutes shown, never the history kept. `countAllJobs` scans the table (`jobvisor stats --all`).
 */
import { rolledUpTo } from './finished_rollup.ts';
import { planned, run, type Now, type Store } from './sql.ts';

export interface JobCount {
  queue: string;
  kind: string;
  status: string;
  count: number;
  /** Seconds since the oldest due pending job became due (pending rows only). */
  oldest_due_s: number | null;
}

// A pending row with run_at = '-infinity' (plain SQL) is due since forever:
// now() - '-infinity' is out of interval range and failed the whole query, so
// `jobvisor stats` exited 1 and /metrics lost its pending gauges. Such a row
// counts as due since 1970 instead: an age that is visibly wrong, not an error.
//
// Shape: one branch per active status, each matching one partial index
// (jobs_pending_idx, jobs_running_idx, jobs_failed_idx, jobs_blocked_idx,
// jobs_waiting_idx). With `status IN (…)`
// over the whole table the planner chose a parallel Seq Scan once the table
// held a million done rows: 380 ms per scrape against 23 ms this way. Sent
// unnamed (planned), so a plan made while the table was tiny is never reused,
// and with sequential scans priced out (`planned(…, 'throughIndexes')`): statistics from the
// tiny table that put a sixth of the grown one in `pending` still tipped the
// pending branch into a parallel sequential scan of all of it. Grouped by
// hashing, ordered here (see HASHED_THROUGH_INDEXES): with fresh statistics of
// a deep history the planner sorted every pending row to group them instead.
const COUNT_ACTIVE = planned(
  'count_active',
  `
SELECT queue, kind, status, count(*)::int AS count,
       extract(epoch FROM coalesce($1::timestamptz, now())
               - min(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'))
                 FILTER (WHERE status = 'pending' AND run_at <= coalesce($1::timestamptz, now()))) AS oldest_due_s
  FROM (SELECT queue, kind, status, run_at FROM jobvisor.jobs WHERE status = 'pending'
        UNION ALL SELECT queue, kind, status, run_at FROM jobvisor.jobs WHERE status = 'running'
        UNION ALL SELECT queue, kind, status, run_at FROM jobvisor.jobs WHERE status = 'failed'
        UNION ALL SELECT queue, kind, status, run_at FROM jobvisor.jobs WHERE status = 'blocked'
        UNION ALL SELECT queue, kind, status, run_at FROM jobvisor.jobs WHERE status = 'waiting') AS active
 GROUP BY 1, 2, 3`,
  'hashedThroughIndexes',
);

const COUNT_ALL = planned(
  'count_all',
  `
SELECT queue, kind, status, count(*)::int AS count,
       extract(epoch FROM coalesce($1::timestamptz, now())
               - min(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'))
                 FILTER (WHERE status = 'pending' AND run_at <= coalesce($1::timestamptz, now()))) AS oldest_due_s
  FROM jobvisor.jobs
 GROUP BY 1, 2, 3
 ORDER BY 1, 2, 3`,
);

function numbers(rows: JobCount[]): JobCount[] {
  return rows.map((r) => ({ ...r, oldest_due_s: r.oldest_due_s === null ? null : Number(r.oldest_due_s) }));
}

const byCodePoint = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

/** Orders counts by queue, kind and status, in code-point order (for Array.prototype.sort). */
export function byQueueKindStatus(a: JobCount, b: JobCount): number {
  return byCodePoint(a.queue, b.queue) || byCodePoint(a.kind, b.kind) || byCodePoint(a.status, b.status);
}

export async function countActiveJobs(store: Store, now: Now = null): Promise<JobCount[]> {
  return numbers(await run<JobCount>(store, COUNT_ACTIVE, [now])).sort(byQueueKindStatus);
}

// The oldest due job of each queue, without counting: one probe of
// jobs_pending_idx (queue, priority, run_at, id) per (queue, priority) present,
// each reading the head of its range, so the cost does not grow with the
// backlog. The earliest head of a queue is its earliest pending run_at; if that
// is due, it is the oldest due job. With sequential scans priced out like the counts.
// A paused queue is left out: its jobs wait on purpose, and an age growing with
// the clock there would page (JobvisorOldestPendingTooOld) for nothing to fix.
// One primary-key probe of jobvisor.queues per queue present.
const OLDEST_DUE = planned(
  'oldest_due',
  `
WITH RECURSIVE heads AS (
  (SELECT queue, priority, run_at FROM jobvisor.jobs
    WHERE status = 'pending'
    ORDER BY queue, priority, run_at LIMIT 1)
  UNION ALL
  SELECT next.queue, next.priority, next.run_at
    FROM heads AS h
   CROSS JOIN LATERAL (
     SELECT queue, priority, run_at FROM jobvisor.jobs
      WHERE status = 'pending' AND (queue, priority) > (h.queue, h.priority)
      ORDER BY queue, priority, run_at LIMIT 1) AS next
)
SELECT queue,
       extract(epoch FROM coalesce($1::timestamptz, now())
               - min(greatest(run_at, timestamptz '1970-01-01 00:00:00+00'))) AS oldest_due_s
  FROM heads
 WHERE run_at <= coalesce($1::timestamptz, now())
   AND NOT EXISTS (SELECT 1 FROM jobvisor.queues AS q WHERE q.queue = heads.queue AND q.paused)
 GROUP BY queue
 ORDER BY queue`,
  'throughIndexes',
);

/**
 * Seconds since the oldest due pending job of each queue became due (queues
 * with nothing due, and paused queues, are left out). Costs one index probe per (queue, priority)
 * present, whatever the backlog: the /metrics age gauge reads it on every
 * refresh, where the counts may have to wait (src/metrics/database_gauges.ts).
 */
export async function oldestDueByQueue(
  store: Store,
  now: Now = null,
): Promise<Array<{ queue: string; oldest_due_s: number }>> {
  const rows = await run<{ queue: string; oldest_due_s: string }>(store, OLDEST_DUE, [now]);
  return rows.map((r) => ({ queue: r.queue, oldest_due_s: Number(r.oldest_due_s) }));
}

// Done and cancelled jobs of the last hour (from the start of the minute that
// holds now − 1 hour, as the Overview counts it), by queue and kind: the
// minutes before the rollup's watermark from finished_minutes (./finished_rollup.ts),
// the rows from the watermark on through jobs_finished_idx. So the cost follows
// the minutes and kinds shown and the rows not yet rolled up, not the rows that
// finished in the hour. The watermark is read first and passed in ($2), so the
// planner knows the tail's range (see admin/throughput.ts).
const HOUR_AGO = `date_bin('1 minute', coalesce($1::timestamptz, now()) - interval '1 hour', timestamptz '1970-01-01 00:00:00+00')`;
const UPTO = `coalesce($2::timestamptz, '-infinity')`;
const COUNT_RECENTLY_FINISHED = planned(
  'count_recently_finished',
  `
SELECT queue, kind, status, sum(n)::int AS count, NULL::float8 AS oldest_due_s
  FROM (SELECT queue, kind, 'done' AS status, sum(done) AS n FROM jobvisor.finished_minutes
         WHERE minute >= ${HOUR_AGO} AND minute < ${UPTO} GROUP BY 1, 2
        UNION ALL
        SELECT queue, kind, 'cancelled', sum(cancelled) FROM jobvisor.finished_minutes
         WHERE minute >= ${HOUR_AGO} AND minute < ${UPTO} GROUP BY 1, 2
        UNION ALL
        SELECT queue, kind, status, count(*) FROM jobvisor.jobs
         WHERE status IN ('done', 'cancelled') AND finished_at >= ${HOUR_AGO} AND finished_at >= ${UPTO}
         GROUP BY 1, 2, 3) AS c
 GROUP BY 1, 2, 3
HAVING sum(n) > 0
 ORDER BY 1, 2, 3`,
  'throughIndexes',
);

export async function countRecentlyFinished(store: Store, now: Now = null): Promise<JobCount[]> {
  return numbers(await run<JobCount>(store, COUNT_RECENTLY_FINISHED, [now, await rolledUpTo(store)]));
}

export async function countAllJobs(store: Store, now: Now = null): Promise<JobCount[]> {
  return numbers(await run<JobCount>(store, COUNT_ALL, [now]));
}
