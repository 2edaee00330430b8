/**
 * Heartbeats: one statement renews the lease of every job this supervisor runs.
 * Only `locked_until` changes and no index covers it, so the update stays HOT.
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';

const RENEW_LEASES = planned(
  'renew_leases',
  `
UPDATE jobvisor.jobs
   SET locked_until = coalesce($4::timestamptz, now()) + $3::float8 * interval '1 millisecond'
 WHERE id = ANY($1::bigint[]) AND status = 'running' AND locked_by = $2
RETURNING id`,
);

/**
 * Extends the leases of `ids` held by `owner`.
 * @returns the ids still held; any other id was lost (reaped, cancelled) and its task must stop.
 */
export async function renewLeases(
  store: Store,
  owner: string,
  ids: string[],
  leaseMs: number,
  now: Now = null,
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await run<{ id: string }>(store, RENEW_LEASES, [intArray(ids), owner, leaseMs, now]);
  return new Set(rows.map((r) => r.id));
}
