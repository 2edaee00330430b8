/**
 * Throughput for the Overview's chart: jobs done and dead-lettered per time
 * bucket over the last hour or day. The buckets before the rollup's watermark
 * are read from the rollup (../finished_rollup.ts): the hour's minutes from
 * finished_minutes, the day's quarters of an hour from finished_quarters
 * (migration 021: at most 96 rows per queue and kind, where the day's minutes
 * were 1,440). The rows from the watermark on are counted in the jobs table
 * (finished_at), so a render reads the rollup's rows for the range and the
 * minute or two of rows not yet rolled up, however many rows finished in it.
 *
 * A rolled-up minute is frozen: a dead letter re-queued (or deleted) later
 * still counts as dead-lettered in its minute, while the rows not yet rolled
 * up count as they are now.
 */
import { planned, run, type Store } from '../sql.ts';

/** One time bucket of throughput(): jobs done and dead-lettered in it. */
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

// The watermark and the rolled-up buckets in one statement, so one snapshot:
// a quarter holds every minute rolled up so far, with no bound of its own at
// the watermark, so a rollup that committed between a read of the watermark
// and a read of the quarters would be counted twice (in its quarter, and as
// rows from the old watermark on). No watermark row: no row at all, and the
// jobs are counted as they were before the rollup existed.
const ROLLED = {
  hour: planned(
    'admin_throughput_minutes',
    `
SELECT w.upto, r.bucket, r.done, r.failed
  FROM jobvisor.finished_rollup AS w
  LEFT JOIN LATERAL (SELECT minute AS bucket, sum(done)::int AS done, sum(failed)::int AS failed
                       FROM jobvisor.finished_minutes
                      WHERE minute >= $1::timestamptz AND minute < w.upto
                      GROUP BY minute) AS r ON true
 WHERE w.one`,
  ),
  day: planned(
    'admin_throughput_quarters',
    `
SELECT w.upto, r.bucket, r.done, r.failed
  FROM jobvisor.finished_rollup AS w
  LEFT JOIN LATERAL (SELECT quarter AS bucket, sum(done)::int AS done, sum(failed)::int AS failed
                       FROM jobvisor.finished_quarters
                      WHERE quarter >= $1::timestamptz
                      GROUP BY quarter) AS r ON true
 WHERE w.one`,
  ),
};

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
const TAIL = `finished_at >= $1::timestamptz AND finished_at >= coalesce($3::timestamptz, '-infinity')`;
const NOT_ROLLED_UP = planned(
  'admin_throughput',
  `
SELECT bucket,
       (sum(n) FILTER (WHERE what = 'finished') - coalesce(sum(n) FILTER (WHERE what <> 'finished'), 0))::int AS done,
       coalesce(sum(n) FILTER (WHERE what = 'failed'), 0)::int AS failed
  FROM (SELECT 'finished' AS what, ${BUCKET} AS bucket, count(*) AS n FROM jobvisor.jobs
         WHERE status IN ('done', 'cancelled', 'failed') AND ${TAIL} GROUP BY 2
        UNION ALL
        SELECT 'failed', ${BUCKET}, count(*) FROM jobvisor.jobs
         WHERE status = 'failed' AND ${TAIL} GROUP BY 2
        UNION ALL
        SELECT 'cancelled', ${BUCKET}, count(*) FROM jobvisor.jobs
         WHERE status = 'cancelled' AND ${TAIL} GROUP BY 2) AS counts
 GROUP BY bucket`,
);

type Counted = { bucket: Date | null; done: number | null; failed: number | null };

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
  const rolledUp = await run<Counted & { upto: Date }>(store, ROLLED[range], [new Date(first)]);
  const upto = rolledUp[0]?.upto ?? null;
  const rest = await run<Counted>(store, NOT_ROLLED_UP, [new Date(first), bucketMs, upto]);
  const byStart = new Map<number, { done: number; failed: number }>();
  for (const r of [...rolledUp, ...rest]) {
    if (r.bucket === null) continue;
    const sum = byStart.get(r.bucket.getTime()) ?? { done: 0, failed: 0 };
    byStart.set(r.bucket.getTime(), { done: sum.done + (r.done ?? 0), failed: sum.failed + (r.failed ?? 0) });
  }
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
