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

const RENEW_LEASES = planned(
  'renew_leases',
  `
UPDATE jobvisor.jobs AS j
   SET locked_until = coalesce($4::timestamptz, now()) + $3::float8 * interval '1 millisecond'
 WHERE j.id = ANY($1::bigint[]) AND j.locked_by = $2 AND j.lease_token = ANY($5::bigint[])
   AND (j.status = 'running' OR (j.status = 'cancelled' AND j.finished_at IS NULL AND j.locked_until IS NOT NULL))
RETURNING j.lease_token::text AS token, j.status = 'running' AS running`,
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
