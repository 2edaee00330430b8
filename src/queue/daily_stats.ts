/**
 * Per-kind job activity of one calendar day, for the `daily_report` task.
 *
 * A day is `[day 00:00, day+1 00:00)` in the given IANA time zone. Per kind:
 * - completed: jobs now `done` whose finished_at falls in the day;
 * - dead_lettered: jobs now `failed` whose finished_at falls in the day;
 * - retried: failed attempts recorded in `errors` with `at` in the day, except the
 *   last entry of a job that is now `failed` (that attempt was dead-lettered, not
 *   retried). A dead letter later re-queued by hand makes its old last entry a retry;
 * - wait (started_at − run_at) and run (finished_at − started_at) percentiles over the
 *   jobs counted as completed or dead-lettered, latest attempt only, in seconds.
 * Jobs deleted by cleanup before the report runs are not counted.
 */
import { planned, run, type Store } from './sql.ts';

export interface KindDayStats {
  kind: string;
  completed: number;
  retried: number;
  deadLettered: number;
  /** Seconds; null when no job of the kind finished that day. */
  waitP50: number | null;
  waitP95: number | null;
  waitP99: number | null;
  runP50: number | null;
  runP95: number | null;
  runP99: number | null;
}

// One pass over the finished rows of the day (jobs_finished_idx finds them) and one
// over the rows that have any error history; the two meet in a FULL JOIN so a kind
// that only failed attempts that day still gets a row. `errors` is not indexed: the
// second pass reads every row with a non-empty history, which cleanup keeps bounded.
const DAILY_STATS = planned(
  'daily_stats',
  `
WITH bounds AS (
  SELECT ($1::date::timestamp AT TIME ZONE $2) AS day_start,
         (($1::date + 1)::timestamp AT TIME ZONE $2) AS day_end
), finished AS (
  SELECT j.kind,
         count(*) FILTER (WHERE j.status = 'done') AS completed,
         count(*) FILTER (WHERE j.status = 'failed') AS dead_lettered,
         percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM j.started_at - j.run_at)::float8) AS wait,
         percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM j.finished_at - j.started_at)::float8) AS run
  FROM jobvisor.jobs j, bounds b
  WHERE j.status IN ('done', 'failed') AND j.finished_at >= b.day_start AND j.finished_at < b.day_end
  GROUP BY j.kind
), retries AS (
  SELECT j.kind, count(*) AS retried
  FROM jobvisor.jobs j
  CROSS JOIN bounds b
  CROSS JOIN LATERAL jsonb_array_elements(j.errors) WITH ORDINALITY AS e(entry, n)
  WHERE j.errors <> '[]'::jsonb
    AND (e.entry ->> 'at')::timestamptz >= b.day_start
    AND (e.entry ->> 'at')::timestamptz < b.day_end
    AND NOT (j.status = 'failed' AND e.n = jsonb_array_length(j.errors))
  GROUP BY j.kind
)
SELECT kind,
       coalesce(f.completed, 0)::int AS completed,
       coalesce(r.retried, 0)::int AS retried,
       coalesce(f.dead_lettered, 0)::int AS dead_lettered,
       f.wait, f.run
FROM finished f FULL JOIN retries r USING (kind)
ORDER BY kind`,
);

// The day before the job's due time, in the report's time zone. least(run_at,
// created_at): a retry moves run_at forward (possibly past midnight) but never
// created_at, and a schedule fire enqueued late keeps its fire time in run_at.
const DAY_BEFORE_DUE = planned(
  'day_before_due',
  `
SELECT to_char((coalesce((SELECT least(run_at, created_at) FROM jobvisor.jobs WHERE id = $1::bigint), now()) AT TIME ZONE $2)::date - 1, 'YYYY-MM-DD') AS day`,
);

/** Activity per kind on `day` (YYYY-MM-DD) in `timezone`, ordered by kind. Throws pg errors as they come. */
export async function dailyStats(store: Store, day: string, timezone: string): Promise<KindDayStats[]> {
  const rows = await run<{
    kind: string;
    completed: number;
    retried: number;
    dead_lettered: number;
    wait: number[] | null;
    run: number[] | null;
  }>(store, DAILY_STATS, [day, timezone]);
  return rows.map((r) => ({
    kind: r.kind,
    completed: r.completed,
    retried: r.retried,
    deadLettered: r.dead_lettered,
    waitP50: r.wait?.[0] ?? null,
    waitP95: r.wait?.[1] ?? null,
    waitP99: r.wait?.[2] ?? null,
    runP50: r.run?.[0] ?? null,
    runP95: r.run?.[1] ?? null,
    runP99: r.run?.[2] ?? null,
  }));
}

/** The day (YYYY-MM-DD, in `timezone`) before job `jobId` was due; the day before today when the job row is gone. */
export async function dayBeforeDue(store: Store, jobId: string, timezone: string): Promise<string> {
  const rows = await run<{ day: string }>(store, DAY_BEFORE_DUE, [jobId, timezone]);
  return rows[0]!.day;
}
