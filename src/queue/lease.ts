/**
 * Heartbeats: one statement renews the lease of every job this supervisor runs.
 * Only `locked_until` changes and no index covers it, so the update stays HOT.
 *
 * Fenced like every write after a claim: a lease is renewed only for the claim
 * that holds it (its token), so a run whose job was cancelled and claimed
 * again meanwhile -- even by this same supervisor -- learns that it lost it.
 *
 * A run whose job was cancelled is lost too (its task is stopped), but its
 * lease is still renewed while the run lasts: on a limited queue that lease
 * holds the job's slot until the run has ended (cancelled_slot.ts).
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';
import type { Fence } from './types.ts';

const HELD = `j.id = ANY($1::bigint[]) AND j.locked_by = $2 AND j.lease_token = ANY($5::bigint[])
   AND (j.status = 'running' OR (j.status = 'cancelled' AND j.finished_at IS NULL AND j.locked_until IS NOT NULL))`;

/*
 * The rows are locked with SKIP LOCKED, never waited for: a heartbeat that
 * waited for a row lock held by another writer (this supervisor's completer
 * or a batch call's start, each locking its rows in its own order) deadlocked
 * with it, and each failed round left every lease un-renewed; under a large
 * prefetched backlog the rounds kept failing until the leases ran out and the
 * jobs were reaped and run again while their supervisor was alive. A row some
 * writer has locked right now is still this claim's as far as the snapshot
 * shows: it is reported held (`busy`), not lost, and renewed by the next beat.
 */
const RENEW_LEASES = planned(
  'renew_leases',
  `
WITH held AS (
  SELECT j.id FROM jobvisor.jobs AS j
   WHERE ${HELD}
   FOR NO KEY UPDATE SKIP LOCKED
), renewed AS (
  UPDATE jobvisor.jobs AS j
     SET locked_until = coalesce($4::timestamptz, now()) + $3::float8 * interval '1 millisecond'
    FROM held
   WHERE j.id = held.id
  RETURNING j.lease_token::text AS token, j.status = 'running' AS running
)
SELECT token, running FROM renewed
UNION ALL
SELECT j.lease_token::text AS token, j.status = 'running' AS running
  FROM jobvisor.jobs AS j
 WHERE ${HELD}
   AND NOT EXISTS (SELECT 1 FROM held WHERE held.id = j.id)`,
);

/**
 * Extends the leases of the claims in `held`, owned by `owner`.
 * @returns the tokens still held running; any other claim was lost (reaped, cancelled, re-queued) and its task must stop.
 */
export async function renewLeases(
  store: Store,
  owner: string,
  held: Fence[],
  leaseMs: number,
  now: Now = null,
): Promise<Set<string>> {
  if (held.length === 0) return new Set();
  const rows = await run<{ token: string; running: boolean }>(store, RENEW_LEASES, [
    intArray(held.map((f) => f.id)),
    owner,
    leaseMs,
    now,
    intArray(held.map((f) => f.token)),
  ]);
  return new Set(rows.filter((r) => r.running).map((r) => r.token));
}
