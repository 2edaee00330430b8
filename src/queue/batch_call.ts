/**
 * The start of a batch call (supervisor/dispatch/batch_dispatch.ts): one
 * statement for the call's jobs, just before they are passed to the task.
 *
 * It renews each job's lease (a job that gathered for maxWait starts its call
 * with a full lease) and records the call's id as the job's batch_id, fenced
 * like every write after a claim: a job that is no longer running under this
 * owner and claim token (cancelled while it gathered, reaped, re-queued) is
 * not returned, and its supervisor drops it instead of passing it. The shape
 * is the heartbeat's (lease.ts): rows found through `id = ANY`, the fence
 * checked against `lease_token = ANY`.
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';
import type { Fence } from './types.ts';

const START_BATCH_CALL = planned(
  'start_batch_call',
  `
UPDATE jobvisor.jobs AS j
   SET locked_until = coalesce($4::timestamptz, now()) + $3::float8 * interval '1 millisecond',
       batch_id = $6::bigint
 WHERE j.id = ANY($1::bigint[]) AND j.locked_by = $2 AND j.lease_token = ANY($5::bigint[])
   AND j.status = 'running'
RETURNING j.lease_token::text AS token`,
);

/**
 * Starts call `callId` for the claims in `jobs` owned by `owner`: renews their
 * leases and records the call on each.
 * @returns the tokens still held; any other claim was lost and must not be passed.
 */
export async function startBatchCall(
  store: Store,
  owner: string,
  callId: string,
  jobs: Fence[],
  leaseMs: number,
  now: Now = null,
): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const rows = await run<{ token: string }>(store, START_BATCH_CALL, [
    intArray(jobs.map((f) => f.id)),
    owner,
    leaseMs,
    now,
    intArray(jobs.map((f) => f.token)),
    callId,
  ]);
  return new Set(rows.map((r) => r.token));
}
