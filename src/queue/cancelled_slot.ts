/**
 * Cancelled runs that are still going. Cancelling a running job (admin cancel,
 * or plain SQL) fences its claim off at once, but the task may take a while to
 * stop: its supervisor sees the cancel at its next heartbeat, asks the task to
 * stop, and takes its thread when it does not. Until then the row keeps its
 * lease and a null finished_at, and a limited queue counts it as holding its
 * slot (claim_limited_sql.ts); the heartbeat renews that lease while the run
 * lasts (lease.ts).
 *
 * States of a cancelled row: finished_at null and a lease (a run still going)
 * → finished_at set and no lease (its run has ended, or its lease ran out).
 * Both statements take a row only from the first state to the second, so they
 * cannot undo each other or a later retry.
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';

const END_CANCELLED_RUNS = planned(
  'end_cancelled_runs',
  `
UPDATE jobvisor.jobs AS j
   SET finished_at = coalesce($3::timestamptz, now()), locked_until = NULL
 WHERE j.id = ANY($1::bigint[]) AND j.locked_by = $2 AND j.status = 'cancelled' AND j.finished_at IS NULL
RETURNING j.id, j.queue`,
);

/**
 * The runs of `ids` this supervisor (`owner`) held have ended: those whose job
 * was cancelled meanwhile give their slot back now.
 * @returns the rows that were still holding one.
 */
export async function endCancelledRuns(
  store: Store,
  owner: string,
  ids: readonly string[],
  now: Now = null,
): Promise<Array<{ id: string; queue: string }>> {
  if (ids.length === 0) return [];
  return run(store, END_CANCELLED_RUNS, [intArray(ids), owner, now]);
}

// Through jobs_cancelled_running_idx (migration 014): only rows without a
// finished_at are read, and those are few.
const FINISH_STALE_CANCELLED = planned(
  'finish_stale_cancelled',
  `
WITH t AS (SELECT coalesce($2::timestamptz, now()) AS now),
stale AS (
  SELECT j.id FROM jobvisor.jobs AS j, t
   WHERE j.status = 'cancelled' AND j.finished_at IS NULL AND (j.locked_until IS NULL OR j.locked_until < t.now)
   LIMIT $1
   FOR UPDATE OF j SKIP LOCKED
)
UPDATE jobvisor.jobs AS j
   SET finished_at = least(coalesce(j.locked_until, t.now), t.now), locked_until = NULL
  FROM stale, t
 WHERE j.id = stale.id
RETURNING j.id`,
);

/**
 * Cancelled rows whose run's lease ran out (its supervisor died before it saw
 * the run end), or that never had a run (a plain-SQL cancel of pending jobs):
 * they get a finished_at, so cleanup can delete them in time. At most `limit`.
 * @returns how many rows it finished.
 */
export async function finishStaleCancelled(store: Store, limit: number, now: Now = null): Promise<number> {
  return (await run<{ id: string }>(store, FINISH_STALE_CANCELLED, [limit, now])).length;
}
