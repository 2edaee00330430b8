/**
 * A wait's outcome, as the worker thread decides it (ctx.waitFor): table
 * job_steps of migration 027, signals of migration 028. Fenced on the run's
 * claim like every statement of queue/steps.ts: decided and recorded only
 * while the job's row is `running` under the run's lease_token, the row
 * locked FOR SHARE in the same statement (a re-claim, a cancel or a
 * completion needs a stronger lock, so none slips between the check and the
 * record).
 */
import { intArray, planned, run, type Db, type Now } from './sql.ts';
import type { StepClaim } from './steps.ts';

// Each wait's outcome, decided once and recorded: the signal of its name when
// one has committed (visible to this statement), else the timeout when its
// deadline has passed, else nothing (the run parks: queue/wait.ts). The
// record, once finished, is never changed (the WHERE of DO UPDATE), so every
// later run returns the same. A signal committed while this statement waited
// for a row lock is not in its snapshot: the run then parks, and the park
// (which reads after its lock) finds the signal and makes the job pending at
// once.
//
// Batched: a worker thread gathers the waits its runs reach in one turn of its
// event loop into one statement (worker/step_reads.ts); 10,000 waiters
// signalled in one commit resume through a few dozen statements, not 10,000
// commits on the thread's two ctx.db connections. The rows are locked in id
// order (the ORDER BY sits under the lock); a deadlock with another batched
// write of the same rows (the completer's) is retried by the caller. A run is
// named by its token (unique to one claim of one job); (run, name) pairs are
// unique in a batch, since names are unique within a run.
const TAKE_WAIT = planned(
  'take_wait',
  `
WITH req AS (
  SELECT r.id, r.token, r.name FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS r(id, token, name)
), held AS (
  SELECT j.id, j.attempts, j.lease_token FROM jobvisor.jobs AS j
   WHERE j.id = ANY ($1::bigint[]) AND j.lease_token = ANY ($2::bigint[]) AND j.status = 'running'
   ORDER BY j.id
     FOR SHARE
), t AS (SELECT coalesce($4::timestamptz, now()) AS now),
d AS (
  SELECT held.id, req.name, held.attempts, t.now, rec.wake_at, rec.finished_at, rec.result AS recorded,
         CASE WHEN sig.job_id IS NOT NULL THEN jsonb_build_object('received', true, 'payload', sig.payload)
              WHEN rec.wake_at <= t.now THEN '{"received": false}'::jsonb END AS result
    FROM held
    JOIN req ON req.id = held.id AND req.token = held.lease_token
   CROSS JOIN t
    LEFT JOIN jobvisor.job_signals AS sig ON sig.job_id = held.id AND sig.name = req.name
    LEFT JOIN jobvisor.job_steps AS rec ON rec.job_id = held.id AND rec.name = req.name AND rec.kind = 'wait'
), w AS (
  INSERT INTO jobvisor.job_steps AS s (job_id, name, kind, result, attempt, started_at, finished_at)
  SELECT d.id, d.name, 'wait', d.result, d.attempts, d.now, d.now FROM d WHERE d.result IS NOT NULL
  ON CONFLICT (job_id, name) DO UPDATE SET result = excluded.result, finished_at = excluded.finished_at
   WHERE s.kind = 'wait' AND s.finished_at IS NULL
  RETURNING s.job_id, s.name, s.result
)
SELECT d.id::text AS id, d.name,
       coalesce(w.result, CASE WHEN d.finished_at IS NOT NULL THEN d.recorded END)::text AS result,
       extract(epoch FROM d.now - d.wake_at) * 1000 AS past_deadline_ms
  FROM d LEFT JOIN w ON w.job_id = d.id AND w.name = d.name`,
);

/** What a wait's decision found. */
export interface WaitDecision {
  held: boolean;
  /** `{ received, payload? }`, or null: neither a signal nor the deadline yet, so the run parks. */
  result: { received: true; payload: unknown } | { received: false } | null;
  /** How far past its deadline the wait is (ms; null: it has none yet). */
  pastDeadlineMs: number | null;
}

/** A wait a run reached: wait `name` of the run's job. */
export interface WaitClaim extends StepClaim {
  name: string;
}

/** Decides and records each wait of `waits` that can be decided now, in one statement; in their order. */
export async function takeWaits(db: Db, schema: string, waits: WaitClaim[], now: Now = null): Promise<WaitDecision[]> {
  if (waits.length === 0) return [];
  const rows = await run<{ id: string; name: string; result: string | null; past_deadline_ms: string | null }>(
    { db, schema },
    TAKE_WAIT,
    [intArray(waits.map((w) => w.id)), intArray(waits.map((w) => w.token)), waits.map((w) => w.name), now],
  );
  const byKey = new Map(rows.map((r) => [`${r.id}\u0000${r.name}`, r]));
  return waits.map((w) => {
    const row = byKey.get(`${w.id}\u0000${w.name}`);
    if (!row) return { held: false, result: null, pastDeadlineMs: null };
    return {
      held: true,
      result: row.result ? (JSON.parse(row.result) as WaitDecision['result']) : null,
      pastDeadlineMs: row.past_deadline_ms === null ? null : Number(row.past_deadline_ms),
    };
  });
}

/** Decides and records the wait `name` of job `id` (claimed with `token`), if it can be decided now. */
export async function takeWait(db: Db, schema: string, wait: WaitClaim, now: Now = null): Promise<WaitDecision> {
  const [decided] = await takeWaits(db, schema, [wait], now);
  return decided as WaitDecision;
}
