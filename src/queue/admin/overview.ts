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

// '-infinity' run_at counts as due since 1970 (see stats.ts).
const QUEUE_COUNTS = planned(
  'admin_queue_counts',
  `
WITH t AS (SELECT coalesce($1::timestamptz, now()) AS now),
counts AS (
  SELECT queue, count(*) AS pending, count(*) FILTER (WHERE run_at <= t.now) AS due, 0 AS running, 0 AS dead,
         0 AS done, min(greatest(run_at, timestamptz '1970-01-01 00:00:00+00')) FILTER (WHERE run_at <= t.now) AS oldest
    FROM jobvisor.jobs, t WHERE status = 'pending' GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, count(*), 0, 0, NULL FROM jobvisor.jobs WHERE status = 'running' GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, count(*), 0, NULL FROM jobvisor.jobs WHERE status = 'failed' GROUP BY queue
  UNION ALL
  SELECT queue, 0, 0, 0, 0, count(*), NULL FROM jobvisor.jobs, t
   WHERE status = 'done' AND finished_at > t.now - interval '1 hour' GROUP BY queue
)
SELECT queue, sum(pending)::int AS pending, sum(due)::int AS due, sum(running)::int AS running,
       sum(dead)::int AS dead, sum(done)::int AS "doneLastHour",
       extract(epoch FROM (SELECT now FROM t) - min(oldest))::float8 AS oldest_due_s
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

const THROUGHPUT = planned(
  'admin_throughput',
  `
SELECT floor(extract(epoch FROM finished_at) * 1000 / $2::float8) * $2::float8 AS bucket_ms,
       count(*) FILTER (WHERE status = 'done')::int AS done,
       count(*) FILTER (WHERE status = 'failed')::int AS failed
  FROM jobvisor.jobs
 WHERE status IN ('done', 'failed') AND finished_at >= $1::timestamptz
 GROUP BY 1`,
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
  const rows = await run<{ bucket_ms: number; done: number; failed: number }>(store, THROUGHPUT, [
    new Date(first),
    bucketMs,
  ]);
  const byStart = new Map(rows.map((r) => [Number(r.bucket_ms), r]));
  const buckets: ThroughputBucket[] = [];
  for (let t = first; t <= last; t += bucketMs) {
    const r = byStart.get(t);
    buckets.push({ bucketStart: new Date(t), done: r?.done ?? 0, failed: r?.failed ?? 0 });
  }
  return buckets;
}

const NOW = planned('admin_now', `SELECT now() AS now`);

async function databaseNow(store: Store): Promise<Date> {
  const [row] = await run<{ now: Date }>(store, NOW, []);
  return row?.now ?? new Date();
}
