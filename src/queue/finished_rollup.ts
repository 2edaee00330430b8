/**
 * The per-minute rollup of finished jobs (migration 020): `finished_minutes`
 * holds, per minute, queue and kind, the jobs that finished done, failed (dead
 * letters) and cancelled in it; `finished_rollup.upto` is the watermark.
 *
 * Invariant: every finished row with finished_at before `upto` is counted in
 * finished_minutes exactly once, and none from `upto` on. `upto` is always the
 * start of a minute and only moves forward, so a minute before it never
 * changes again (until cleanup deletes it). Readers (admin/throughput.ts,
 * admin/overview.ts) read the watermark first (`rolledUpTo`), then sum the
 * minutes before it and count the rows from it on in jobs: a rollup that
 * commits in between writes only minutes from the watermark on, which they
 * do not read, so they count every row once.
 * A trigger (migration 021) keeps finished_quarters equal to the minutes
 * summed per 15 minutes, whoever writes or deletes them; a quarter has no
 * bound at the watermark, so its readers read it and the watermark in one
 * statement (admin/throughput.ts).
 *
 * What that leaves out, on purpose:
 * - A minute is counted once it ended at least SETTLE_SECONDS ago (a
 *   completion's finished_at is its transaction's start, so a row may commit a
 *   little after it). A row deleted before its minute is counted (within a
 *   minute and 10 s of finishing: `cleanup.retention` 0, which deletes a done
 *   row in its completion statement, or a retention that short) is never counted.
 * - A counted minute is frozen: a dead letter re-queued later still counts as
 *   dead-lettered in its minute, and a row inserted later by plain SQL with an
 *   older finished_at than `upto` is not counted. Rows from `upto` on are read
 *   as they are now.
 * - Minutes more than HORIZON back when a rollup runs are skipped, not counted:
 *   no reader looks further back than a day (the day chart), so a watermark
 *   left behind (supervisors stopped for a week) moves to a day ago at once
 *   instead of counting the history that cleanup has not deleted yet.
 */
import { planned, run, type Now, type Store } from './sql.ts';

/** Minutes that ended less than this long ago are not counted yet. */
export const SETTLE_SECONDS = 10;
/**
 * The most a rollup statement counts: 15 minutes of finished rows. At 1,000
 * jobs/s that is 900,000 rows, read from the heap for their queue and status;
 * catching up a day after the migration is 96 statements, each far below the
 * supervisor's statement_timeout.
 */
export const ROLLUP_CHUNK_MS = 15 * 60_000;
/** finished_minutes rows older than this are deleted by cleanup (readers need a day). */
export const MINUTES_KEPT = '2 days';

const WATERMARK = planned('rollup_watermark', `SELECT upto FROM jobvisor.finished_rollup WHERE one`);

const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`;
const NOW = 'coalesce($2::timestamptz, now())';
const SETTLED = `date_bin('1 minute', ${NOW} - interval '${SETTLE_SECONDS} seconds', ${EPOCH})`;
const HORIZON = `date_bin('1 minute', ${NOW}, ${EPOCH}) - interval '1 day'`;

// One statement: lock the watermark (SKIP LOCKED: a supervisor that finds it
// locked counts nothing and moves nothing), count the span's rows, add them
// to their minutes and move the watermark, so a count and its watermark commit
// together. The span's bounds reach the jobs scan as scalar subqueries, not a
// join, so its plan is one range of jobs_finished_idx (estimated at 0.5 % of
// the finished rows) whatever PostgreSQL guesses about the watermark table's
// rows (1,100 before it is analyzed). `WHERE one` (its primary key) in both
// reads of the watermark: under `throughIndexes` a sequential scan is priced
// out, not forbidden, and a plan that keeps one costs over 10^10, past
// jit_above_cost, so PostgreSQL JIT-compiled the statement first: 480 ms for
// a statement that then ran in 1 ms (test/statements.test.ts checks this).
const ROLL_UP = planned(
  'roll_up_finished',
  `
WITH mark AS (
  SELECT greatest(upto, ${HORIZON}) AS since FROM jobvisor.finished_rollup WHERE one FOR UPDATE SKIP LOCKED
), span AS (
  SELECT since, greatest(since, least(since + $1::float8 * interval '1 millisecond', ${SETTLED})) AS until FROM mark
), counted AS (
  SELECT date_bin('1 minute', finished_at, ${EPOCH}) AS minute, queue, kind,
         count(*) FILTER (WHERE status = 'done') AS done,
         count(*) FILTER (WHERE status = 'failed') AS failed,
         count(*) FILTER (WHERE status = 'cancelled') AS cancelled
    FROM jobvisor.jobs
   WHERE status IN ('done', 'cancelled', 'failed')
     AND finished_at >= (SELECT since FROM span) AND finished_at < (SELECT until FROM span)
   GROUP BY 1, 2, 3
), added AS (
  INSERT INTO jobvisor.finished_minutes AS m (minute, queue, kind, done, failed, cancelled)
  SELECT minute, queue, kind, done, failed, cancelled FROM counted
  ON CONFLICT (minute, queue, kind) DO UPDATE
     SET done = m.done + excluded.done, failed = m.failed + excluded.failed, cancelled = m.cancelled + excluded.cancelled
  RETURNING 1
), moved AS (
  UPDATE jobvisor.finished_rollup SET upto = (SELECT until FROM span) WHERE one AND upto < (SELECT until FROM span)
)
SELECT until AS upto, until >= ${SETTLED} AS "caughtUp", (SELECT count(*) FROM added)::int AS minutes FROM span`,
  'throughIndexes',
);

const DELETE_OLD_MINUTES = planned(
  'delete_old_minutes',
  `
WITH gone AS (
  DELETE FROM jobvisor.finished_minutes WHERE minute < coalesce($1::timestamptz, now()) - interval '${MINUTES_KEPT}'
  RETURNING 1
)
SELECT count(*)::int AS n FROM gone`,
);

export interface RollupStep {
  /** The watermark now. */
  upto: Date;
  /** True when every minute that may be counted now is counted. */
  caughtUp: boolean;
  /** (minute, queue, kind) rows written. */
  minutes: number;
}

/**
 * Counts up to `chunkMs` (default ROLLUP_CHUNK_MS) of finished rows past the
 * watermark into finished_minutes and moves the watermark past them. Returns
 * null, having changed nothing, when another transaction holds the watermark
 * (another supervisor's rollup). `now` pins the clock (tests).
 */
export async function rollUpFinished(
  store: Store,
  options: { chunkMs?: number; now?: Now } = {},
): Promise<RollupStep | null> {
  const [row] = await run<RollupStep>(store, ROLL_UP, [options.chunkMs ?? ROLLUP_CHUNK_MS, options.now ?? null]);
  return row ?? null;
}

/**
 * The watermark: finished rows before it are counted in finished_minutes, the
 * others only in jobs. Null without a watermark row: readers then count jobs
 * as they did before the rollup existed.
 */
export async function rolledUpTo(store: Store): Promise<Date | null> {
  const [row] = await run<{ upto: Date }>(store, WATERMARK, []);
  return row?.upto ?? null;
}

/** Deletes the finished_minutes rows older than MINUTES_KEPT. Returns how many. */
export async function deleteOldMinutes(store: Store, now: Now = null): Promise<number> {
  const [row] = await run<{ n: number }>(store, DELETE_OLD_MINUTES, [now]);
  return row?.n ?? 0;
}
