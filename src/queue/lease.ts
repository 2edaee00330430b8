/**
 * Heartbeats: one statement renews the lease of every job this supervisor runs.
 * Only `locked_until` changes and no index covers it, so the update stays HOT.
 *
 * Fenced like every write after a claim: a lease is renewed only for the claim
 * that holds it (its token), so a run whose job was cancelled and claimed
 * again meanwhile -- even by this same supervisor -- learns that it lost it.
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';
import type { Fence } from './types.ts';

const RENEW_LEASES = planned(
  'renew_leases',
  `
UPDATE jobvisor.jobs AS j
   SET locked_until = coalesce($4::timestamptz, now()) + $3::float8 * interval '1 millisecond'
 WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $2
   AND j.lease_token = ANY($5::bigint[])
RETURNING j.lease_token::text AS token`,
);

/**
 * Extends the leases of the claims in `held`, owned by `owner`.
 * @returns the tokens still held; any other claim was lost (reaped, cancelled, re-queued) and its task must stop.
 */
export async function renewLeases(
  store: Store,
  owner: string,
  held: Fence[],
  leaseMs: number,
  now: Now = null,
): Promise<Set<string>> {
  if (held.length === 0) return new Set();
  const rows = await run<{ token: string }>(store, RENEW_LEASES, [
    intArray(held.map((f) => f.id)),
    owner,
    leaseMs,
    now,
    intArray(held.map((f) => f.token)),
  ]);
  return new Set(rows.map((r) => r.token));
}
