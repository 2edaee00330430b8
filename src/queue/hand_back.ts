/**
 * A dead supervisor process's running jobs, handed back by the cluster primary
 * right after the exit, without waiting for their leases to expire.
 *
 * Fenced by owner and token: only rows still `running` under `locked_by` =
 * the dead supervisor's id are touched, each with the lease token it carried
 * when the statement locked it. A supervisor id is unique per process, so no
 * live writer can hold those rows; a write the dead process sent just before
 * it died (a completion committing now) is waited for by the row lock, and a
 * row it completed no longer matches. The attempt is kept, as the reaper keeps
 * it for any crash: a job whose attempts are used up becomes a dead letter.
 */
import { HANDED_BACK_RETURN, SETTLE_DEAD } from './reaper.ts';
import { planned, run, type Now, type Store } from './sql.ts';

const HAND_BACK = planned(
  'hand_back_jobs_of',
  `
WITH owned AS (
  SELECT id, lease_token FROM jobvisor.jobs
   WHERE status = 'running' AND locked_by = $1
   ORDER BY id
   FOR UPDATE
), t AS (SELECT coalesce($3::timestamptz, now()) AS now),
u AS (
UPDATE jobvisor.jobs AS j
   SET ${HANDED_BACK_RETURN}
  FROM owned, t
 WHERE j.id = owned.id AND j.status = 'running' AND j.locked_by = $1
   AND j.lease_token IS NOT DISTINCT FROM owned.lease_token
RETURNING j.id, j.status, j.has_dependents
), ${SETTLE_DEAD}
SELECT u.id, u.status FROM u, settled`,
);

export interface HandedBack {
  id: string;
  status: 'pending' | 'failed';
}

/** Puts `owner`'s running jobs back to pending (failed when no attempt remains), recording `reason`. */
export async function handBackJobsOf(store: Store, owner: string, reason: string, now: Now = null) {
  return run<HandedBack>(store, HAND_BACK, [owner, reason, now]);
}
