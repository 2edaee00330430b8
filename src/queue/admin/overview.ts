/**
 * The dashboard's Overview: per-queue counts, the oldest due job's age, live
 * supervisors, and throughput buckets read from the jobs table.
 *
 * Shape: one branch per status, each matching that status' partial index
 * (jobs_pending_idx, jobs_running_idx, jobs_failed_idx) or, for jobs done in
 * the last hour, the finished_at index, so the cost follows the active rows
 * and the last hour, never the million done rows behind them (see stats.ts
 * for the plan this avoids). Sent unnamed, so no plan made on a tiny table is
 * reused on a large one.
 */
import { planned, run, type Now, type Store } from '../sql.ts';
import { listSupervisors } from './supervisors.ts';
import type { SupervisorRow } from './types.ts';

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
}

export interface Overview {
  queues: QueueOverview[];
  /** Seconds since the oldest due pending job became due; null when none is due. */
  oldestDueAgeSeconds: number | null;
  supervisors: SupervisorRow[];
}

// '-infinity' run_at counts as due since 1970 (see stats.ts). The time is
// written out in each branch, not taken from a CTE: the planner then knows
// it, and estimates the last hour's done rows as the few they are.
const NOW = 'coalesce($1::timestamptz, now())';
const QUEUE_COUNTS = planned(
  'admin_queue_counts',
  `
WITH counts AS (
  SELECT queue, count(*) AS pending, count(*) FILTER (WHERE run_at <= ${NOW}) AS due, 0 AS running, 0 AS dead,
         0 AS done, min(greatest(run_at, timestamptz '1970-01-01 00:00:00+00')) FILTER (WHERE run_at <= ${NOW}) AS oldest
    FROM jobvisor.jobs WHERE status = 'pending' GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, count(*), 0, 0, NULL FROM jobvisor.jobs WHERE status = 'running' GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, count(*), 0, NULL FROM jobvisor.jobs WHERE status = 'failed' GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, 0, count(*), NULL FROM jobvisor.jobs
   WHERE status = 'done' AND finished_at > ${NOW} - interval '1 hour' GROUP BY queue
)
SELECT queue, sum(pending)::int AS pending, sum(due)::int AS due, sum(running)::int AS running,
       sum(dead)::int AS dead, sum(done)::int AS "doneLastHour",
       extract(epoch FROM ${NOW} - min(oldest))::float8 AS oldest_due_s
  FROM counts
 GROUP BY queue
 ORDER BY queue`,
);

/** The Overview page's data. `now` pins the clock (tests); default: the database's. */
export async function overview(store: Store, now: Now = null): Promise<Overview> {
  const [rows, supervisors] = await Promise.all([
    run<QueueOverview & { oldest_due_s: number | null }>(store, QUEUE_COUNTS, [now]),
    listSupervisors(store, now),
  ]);
  let oldest: number | null = null;
  const queues = rows.map(({ oldest_due_s, ...q }) => {
    if (oldest_due_s !== null) oldest = Math.max(oldest ?? 0, oldest_due_s);
    return q;
  });
  return { queues, oldestDueAgeSeconds: oldest, supervisors };
}

export interface ThroughputBucket {
  bucketStart: Date;
  /** Jobs that finished done in the bucket. */
  done: number;
  /** Jobs dead-lettered in the bucket (status failed; retried attempts are not counted). */
  failed: number;
}

/** Bucket widths: one minute over the last hour, fifteen minutes over the last day. */
export const THROUGHPUT_RANGES = {
  hour: { spanMs: 3_600_000, bucketMs: 60_000 },
  day: { spanMs: 86_400_000, bucketMs: 900_000 },
} as const;

// Done = finished − failed − cancelled, each counted through its own index
// (jobs_finished_idx index-only, jobs_failed_idx, jobs_cancelled_idx), never
// by reading a heap page per finished row: the last day of a 1 M-row table
// took 690-830 ms that way, 85 ms this way (see migration 009).
const BUCKET = `date_bin($2::float8 * interval '1 millisecond', finished_at, timestamptz '1970-01-01 00:00:00+00')`;
const THROUGHPUT = planned(
  'admin_throughput',
  `
SELECT bucket,
       (sum(n) FILTER (WHERE what = 'finished') - coalesce(sum(n) FILTER (WHERE what <> 'finished'), 0))::int AS done,
       coalesce(sum(n) FILTER (WHERE what = 'failed'), 0)::int AS failed
  FROM (SELECT 'finished' AS what, ${BUCKET} AS bucket, count(*) AS n FROM jobvisor.jobs
         WHERE status IN ('done', 'cancelled', 'failed') AND finished_at >= $1::timestamptz GROUP BY 2
        UNION ALL
        SELECT 'failed', ${BUCKET}, count(*) FROM jobvisor.jobs
         WHERE status = 'failed' AND finished_at >= $1::timestamptz GROUP BY 2
        UNION ALL
        SELECT 'cancelled', ${BUCKET}, count(*) FROM jobvisor.jobs
         WHERE status = 'cancelled' AND finished_at >= $1::timestamptz GROUP BY 2) AS counts
 GROUP BY bucket`,
);

/**
 * Jobs done and dead-lettered per bucket over the last hour or day, oldest
 * bucket first, with empty buckets present (zeros). Buckets are aligned to
 * multiples of their width since the epoch; the last one is still filling.
 */
export async function throughput(store: Store, range: 'hour' | 'day', now?: Date): Promise<ThroughputBucket[]> {
  const { spanMs, bucketMs } = THROUGHPUT_RANGES[range];
  const end = now ?? (await databaseNow(store));
  const last = Math.floor(end.getTime() / bucketMs) * bucketMs;
  const first = last - spanMs + bucketMs;
  const rows = await run<{ bucket: Date; done: number; failed: number }>(store, THROUGHPUT, [
    new Date(first),
    bucketMs,
  ]);
  const byStart = new Map(rows.map((r) => [r.bucket.getTime(), r]));
  const buckets: ThroughputBucket[] = [];
  for (let t = first; t <= last; t += bucketMs) {
    const r = byStart.get(t);
    buckets.push({ bucketStart: new Date(t), done: r?.done ?? 0, failed: r?.failed ?? 0 });
  }
  return buckets;
}

const DATABASE_NOW = planned('admin_now', `SELECT now() AS now`);

async function databaseNow(store: Store): Promise<Date> {
  const [row] = await run<{ now: Date }>(store, DATABASE_NOW, []);
  return row?.now ?? new Date();
}
