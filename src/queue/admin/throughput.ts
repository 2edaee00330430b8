/**
 * Throughput for the Overview's chart: jobs done and dead-lettered per time
 * bucket over the last hour or day. The minutes before the rollup's watermark
 * are read from finished_minutes (../finished_rollup.ts), the rows from the
 * watermark on from the jobs table (finished_at), so a render reads at most a
 * day of minutes and the minute or two of rows not yet rolled up, however
 * many rows finished in the day.
 *
 * A rolled-up minute is frozen: a dead letter re-queued (or deleted) later
 * still counts as dead-lettered in its minute, while the rows not yet rolled
 * up count as they are now.
 */
import { rolledUpTo } from '../finished_rollup.ts';
import { planned, run, type Store } from '../sql.ts';

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

// The rows not yet rolled up: done = finished − failed − cancelled, each
// counted through its own index (jobs_finished_idx index-only,
// jobs_failed_idx, jobs_cancelled_idx), never by reading a heap page per
// finished row: the last day of a 1 M-row table took 690-830 ms that way,
// 85 ms this way (see migration 009). The watermark ($3) is read before,
// not inside the statement, so the planner sees how few rows follow it: read
// by a subquery it was an unknown, PostgreSQL guessed 1.6 M of 5 M finished
// rows, and that guess's cost passed jit_above_cost, so the day chart spent
// 37 ms compiling a statement that then ran in 2 ms.
const BUCKET = `date_bin($2::float8 * interval '1 millisecond', finished_at, timestamptz '1970-01-01 00:00:00+00')`;
const UPTO = `coalesce($3::timestamptz, '-infinity')`;
const TAIL = `finished_at >= $1::timestamptz AND finished_at >= ${UPTO}`;
const THROUGHPUT = planned(
  'admin_throughput',
  `
SELECT bucket, sum(done)::int AS done, sum(failed)::int AS failed
  FROM (SELECT date_bin($2::float8 * interval '1 millisecond', minute, timestamptz '1970-01-01 00:00:00+00') AS bucket,
               sum(done) AS done, sum(failed) AS failed
          FROM jobvisor.finished_minutes
         WHERE minute >= $1::timestamptz AND minute < ${UPTO}
         GROUP BY 1
        UNION ALL
        SELECT bucket,
               sum(n) FILTER (WHERE what = 'finished') - coalesce(sum(n) FILTER (WHERE what <> 'finished'), 0),
               coalesce(sum(n) FILTER (WHERE what = 'failed'), 0)
          FROM (SELECT 'finished' AS what, ${BUCKET} AS bucket, count(*) AS n FROM jobvisor.jobs
                 WHERE status IN ('done', 'cancelled', 'failed') AND ${TAIL} GROUP BY 2
                UNION ALL
                SELECT 'failed', ${BUCKET}, count(*) FROM jobvisor.jobs
                 WHERE status = 'failed' AND ${TAIL} GROUP BY 2
                UNION ALL
                SELECT 'cancelled', ${BUCKET}, count(*) FROM jobvisor.jobs
                 WHERE status = 'cancelled' AND ${TAIL} GROUP BY 2) AS counts
         GROUP BY bucket) AS parts
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
  const upto = await rolledUpTo(store);
  const rows = await run<{ bucket: Date; done: number; failed: number }>(store, THROUGHPUT, [
    new Date(first),
    bucketMs,
    upto,
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
