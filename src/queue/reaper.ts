/**
 * The reaper: running jobs whose lease ended (their supervisor crashed, froze or
 * lost the database) go back to pending at once, or to failed when no attempts
 * remain. SKIP LOCKED: a row being completed right now is left for the next round.
 *
 * `reapExpiredLeases` is the normal round: one statement. When it fails for a
 * reason other than the connection, the loop lists the expired ids
 * (`listExpiredLeases`) and reaps them by id (`reapLeases`), splitting around
 * the row that fails (see src/supervisor/complete/split_write.ts).
 *
 * Both walk `jobs_running_idx` in id order as an index walk (`planned(…, 'indexWalk')`):
 * on a table never analyzed PostgreSQL chose to read every running row
 * through a bitmap and sort them (test/statements.test.ts).
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';

/**
 * What a crash does to a running job, for the reaper and the cluster primary's
 * hand-back alike (alias `j`, and `t.now` the statement's time): back to
 * pending and due now, or a dead letter when no attempt is left (the attempt
 * the crashed run used stays counted), with `error` (SQL text) recorded.
 */
function crashReturn(error: string): string {
  return `status = CASE WHEN j.attempts >= j.max_attempts THEN 'failed' ELSE 'pending' END,
       finished_at = CASE WHEN j.attempts >= j.max_attempts THEN t.now END,
       run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at ELSE t.now END,
       locked_until = NULL,
       last_error = ${error},
       errors = jobvisor.append_error(j.errors, j.attempts, t.now, ${error})`;
}
const LEASE_EXPIRED_RETURN = crashReturn(
  `'lease expired: supervisor ' || coalesce(j.locked_by, '?') || ' stopped renewing it (crashed, frozen or cut off)'`,
);
/** The hand-back's: the error text is the statement's $2. */
export const HANDED_BACK_RETURN = crashReturn('$2');

/** A dead-lettered workflow parent settles its children (migration 017); reads `u`'s id, status, has_dependents. */
export const SETTLE_DEAD = `settled AS (
  SELECT jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents AND status = 'failed')) FROM u
)`;

// One statement for both paths: $3 null reaps any expired lease (the normal
// round), an id list reaps only those ids (the split path). Sent unnamed, so
// each call is planned with its own arguments and the null case plans as if
// the id test were not there.
const REAP_LEASES = planned(
  'reap_leases',
  `
WITH expired AS (
  SELECT id FROM jobvisor.jobs
   WHERE status = 'running' AND locked_until < coalesce($2::timestamptz, now())
     AND ($3::bigint[] IS NULL OR id = ANY($3::bigint[]))
   ORDER BY id
   LIMIT $1
   FOR UPDATE SKIP LOCKED
), t AS (SELECT coalesce($2::timestamptz, now()) AS now),
u AS (
UPDATE jobvisor.jobs AS j
   SET ${LEASE_EXPIRED_RETURN}
  FROM expired, t
 WHERE j.id = expired.id
RETURNING j.id, j.queue, j.kind, j.status, j.locked_by, j.has_dependents
), ${SETTLE_DEAD}
SELECT u.id, u.queue, u.kind, u.status, u.locked_by FROM u, settled`,
  'indexWalk',
);

export interface ReapedJob {
  id: string;
  queue: string;
  kind: string;
  status: 'pending' | 'failed';
  locked_by: string | null;
}

/** Returns expired leases to pending (or failed); at most `limit` per call. */
export async function reapExpiredLeases(store: Store, limit: number, now: Now = null): Promise<ReapedJob[]> {
  return run<ReapedJob>(store, REAP_LEASES, [limit, now, null]);
}

const LIST_EXPIRED_LEASES = planned(
  'list_expired_leases',
  `
SELECT id FROM jobvisor.jobs
 WHERE status = 'running' AND locked_until < coalesce($2::timestamptz, now()) AND NOT (id = ANY($3::bigint[]))
 ORDER BY id
 LIMIT $1`,
  'indexWalk',
);

/** Ids of expired leases (at most `limit`), leaving out `skip`: the split path's input. */
export async function listExpiredLeases(
  store: Store,
  limit: number,
  skip: readonly string[] = [],
  now: Now = null,
): Promise<string[]> {
  return (await run<{ id: string }>(store, LIST_EXPIRED_LEASES, [limit, now, intArray(skip)])).map((r) => r.id);
}

/** Reaps the given ids, those still running with an expired lease. */
export async function reapLeases(store: Store, ids: readonly string[], now: Now = null): Promise<ReapedJob[]> {
  if (ids.length === 0) return [];
  return run<ReapedJob>(store, REAP_LEASES, [ids.length, now, intArray(ids)]);
}
