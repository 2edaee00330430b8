/**
 * The reaper: running jobs whose lease ended (their supervisor crashed, froze or
 * lost the database) go back to pending at once, or to failed when no attempts
 * remain. SKIP LOCKED: a row being completed right now is left for the next round.
 */
import { planned, run, type Now, type Store } from './sql.ts';

const REAP_EXPIRED_LEASES = planned(
  'reap_expired_leases',
  `
WITH expired AS (
  SELECT id FROM jobvisor.jobs
   WHERE status = 'running' AND locked_until < coalesce($2::timestamptz, now())
   ORDER BY id
   LIMIT $1
   FOR UPDATE SKIP LOCKED
), t AS (SELECT coalesce($2::timestamptz, now()) AS now)
UPDATE jobvisor.jobs AS j
   SET status = CASE WHEN j.attempts >= j.max_attempts THEN 'failed' ELSE 'pending' END,
       finished_at = CASE WHEN j.attempts >= j.max_attempts THEN t.now END,
       run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at ELSE t.now END,
       locked_until = NULL,
       last_error = 'lease expired: supervisor ' || coalesce(j.locked_by, '?') || ' stopped renewing it (crashed, frozen or cut off)',
       errors = jobvisor.append_error(j.errors, j.attempts, t.now,
                'lease expired: supervisor ' || coalesce(j.locked_by, '?') || ' stopped renewing it (crashed, frozen or cut off)')
  FROM expired, t
 WHERE j.id = expired.id
RETURNING j.id, j.queue, j.kind, j.status, j.locked_by`,
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
  return run<ReapedJob>(store, REAP_EXPIRED_LEASES, [limit, now]);
}
