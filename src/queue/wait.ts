/**
 * Waits: runs that called ctx.waitFor(name, { timeout }) and found neither a
 * signal nor their deadline are parked (`waiting`, run_at = the deadline) by
 * the completer's parked writer; the reaper's round wakes the waits whose
 * deadline has passed. Migration 028 says why each is shaped so (the lost
 * wake-up a single statement would allow, and how a signal racing a timeout
 * resumes the job once).
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';

// jobvisor.park_waits (migration 028): lock the fenced rows, then, in a
// statement of its own, park each or make it pending when its signal is
// already there.
const PARK_WAITS = planned(
  'park_waits',
  `
SELECT p.job_id::text AS id, p.status, extract(epoch FROM p.deadline) * 1000 AS deadline_ms
  FROM jobvisor.park_waits($1::bigint[], $2::bigint[], $3, $4::text[],
                           ARRAY(SELECT to_timestamp(u / 1000) FROM unnest($5::float8[]) AS u),
                           $6::float8[], $7::timestamptz) AS p`,
);

/** Waiting runs as parallel arrays: ids[i], claimed with tokens[i], waiting for signal names[i]. */
export interface Waits {
  ids: string[];
  tokens: string[];
  names: string[];
  /** Deadline, ms since the epoch (null: now + timeoutsMs[i], a wait reached for the first time). */
  untilMs: Array<number | null>;
  timeoutsMs: number[];
}

/**
 * Parks waiting runs' jobs (status `waiting` until their signal or deadline),
 * their attempt given back; a job whose signal is already there becomes
 * pending at once instead.
 * @returns the ids written, each `waiting` or `pending`, with its deadline; a missing id was fenced off.
 */
export async function parkWaits(
  store: Store,
  owner: string,
  w: Waits,
  now: Now = null,
): Promise<Array<{ id: string; status: 'waiting' | 'pending'; deadlineMs: number }>> {
  if (w.ids.length === 0) return [];
  const rows = await run<{ id: string; status: 'waiting' | 'pending'; deadline_ms: string }>(store, PARK_WAITS, [
    intArray(w.ids),
    intArray(w.tokens),
    owner,
    w.names,
    w.untilMs,
    w.timeoutsMs,
    now,
  ]);
  return rows.map((r) => ({ id: r.id, status: r.status, deadlineMs: Number(r.deadline_ms) }));
}

// The oldest deadlines first, through jobs_waiting_idx as an index walk, each
// row locked SKIP LOCKED: a row a signal holds is being woken by it (the
// UPDATE re-checks `waiting` anyway). run_at stays the deadline, so the wait
// histogram (due → start) measures how late the timeout was noticed.
const WAKE_TIMED_OUT = planned(
  'wake_timed_out_waits',
  `
WITH due AS (
  SELECT id FROM jobvisor.jobs
   WHERE status = 'waiting' AND run_at <= coalesce($2::timestamptz, now())
   ORDER BY run_at
   LIMIT $1
   FOR UPDATE SKIP LOCKED
)
UPDATE jobvisor.jobs AS j
   SET status = 'pending', waiting_for = NULL
  FROM due
 WHERE j.id = due.id AND j.status = 'waiting'
RETURNING j.id, j.queue, j.kind`,
  'indexWalk',
);

/** Waiting jobs whose deadline has passed go back to pending (their wait times out); at most `limit`. */
export async function wakeTimedOutWaits(
  store: Store,
  limit: number,
  now: Now = null,
): Promise<Array<{ id: string; queue: string; kind: string }>> {
  return run(store, WAKE_TIMED_OUT, [limit, now]);
}
