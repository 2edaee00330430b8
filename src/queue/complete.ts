/**
 * Recording outcomes, in batches, every write fenced: a row changes only while it
 * is still `running` under the same owner and attempt. A supervisor that lost its
 * lease (frozen, cut off, reaped) therefore changes nothing when it wakes.
 *
 * Each statement joins `unnest` arrays to the table and also says
 * `j.id = ANY($1)`: the redundant predicate gives the planner the real row
 * count, so it probes the primary key instead of hashing the whole table.
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';
import type { Attempt } from './types.ts';

// Answers with a count; the ids come back only when some row was fenced off
// (rare), so a batch of a thousand completions parses one row, not a thousand.
const COMPLETE_JOBS = planned('complete_jobs', `
WITH u AS (
  UPDATE jobvisor.jobs AS j
     SET status = 'done', locked_until = NULL, finished_at = coalesce($4::timestamptz, now())
    FROM unnest($1::bigint[], $2::int[]) AS c(id, attempt)
   WHERE j.id = ANY($1::bigint[]) AND j.id = c.id
     AND j.status = 'running' AND j.locked_by = $3 AND j.attempts = c.attempt
  RETURNING j.id
)
SELECT count(*)::int AS written,
       CASE WHEN count(*) < cardinality($1::bigint[]) THEN array_agg(id)::text[] END AS ids
  FROM u`);

/**
 * Marks jobs done (ids[i] at attempts[i]).
 * @returns the ids that were NOT written: fenced off, this owner no longer holds that attempt.
 */
export async function completeJobs(store: Store, owner: string, ids: string[], attempts: number[], now: Now = null): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const [row] = await run<{ written: number; ids: string[] | null }>(store, COMPLETE_JOBS, [intArray(ids), intArray(attempts), owner, now]);
  if (!row || row.written === ids.length) return new Set();
  const written = new Set(row.ids ?? []);
  return new Set(ids.filter((id) => !written.has(id)));
}

// The database decides retry or dead letter with the row's current max_attempts.
const FAIL_JOBS = planned('fail_jobs', `
WITH f AS (
  SELECT * FROM unnest($1::bigint[], $2::int[], $3::boolean[], $4::float8[], $5::text[])
         AS f(id, attempt, permanent, delay_ms, error)
), t AS (SELECT coalesce($7::timestamptz, now()) AS now)
UPDATE jobvisor.jobs AS j
   SET status = CASE WHEN f.permanent OR j.attempts >= j.max_attempts THEN 'failed' ELSE 'pending' END,
       run_at = CASE WHEN f.permanent OR j.attempts >= j.max_attempts THEN j.run_at
                     ELSE t.now + f.delay_ms * interval '1 millisecond' END,
       finished_at = CASE WHEN f.permanent OR j.attempts >= j.max_attempts THEN t.now END,
       locked_until = NULL,
       last_error = f.error,
       errors = jobvisor.append_error(j.errors, j.attempts, t.now, f.error)
  FROM f, t
 WHERE j.id = ANY($1::bigint[]) AND j.id = f.id
   AND j.status = 'running' AND j.locked_by = $6 AND j.attempts = f.attempt
RETURNING j.id, j.status`);

/**
 * Records failed attempts: each becomes a retry at now + delayMs, or a dead
 * letter (`failed`) when permanent or out of attempts.
 * Returns the ids written with their new status.
 */
export async function failJobs(store: Store, owner: string, f: Failures, now: Now = null): Promise<Array<{ id: string; status: 'pending' | 'failed' }>> {
  if (f.ids.length === 0) return [];
  return run(store, FAIL_JOBS, [f.ids, f.attempts, f.permanent, f.delaysMs, f.errors, owner, now]);
}

/** Failed attempts as parallel arrays: ids[i] failed at attempts[i] with errors[i]. */
export interface Failures {
  ids: string[];
  attempts: number[];
  /** Dead-letter now whatever attempts remain. */
  permanent: boolean[];
  /** Retry after this many ms (ignored when the job is dead-lettered). */
  delaysMs: number[];
  errors: string[];
}

// Handing back gives the attempt back: the job did not fail, this supervisor left.
const RELEASE_JOBS = planned('release_jobs', `
UPDATE jobvisor.jobs AS j
   SET status = 'pending', attempts = j.attempts - 1, locked_until = NULL
  FROM unnest($1::bigint[], $2::int[]) AS c(id, attempt)
 WHERE j.id = ANY($1::bigint[]) AND j.id = c.id
   AND j.status = 'running' AND j.locked_by = $3 AND j.attempts = c.attempt
RETURNING j.id`);

/** Returns claimed jobs to pending without using up their attempt (shutdown). */
export async function releaseJobs(store: Store, owner: string, jobs: Attempt[]): Promise<string[]> {
  if (jobs.length === 0) return [];
  const rows = await run<{ id: string }>(store, RELEASE_JOBS, [jobs.map((j) => j.id), jobs.map((j) => j.attempt), owner]);
  return rows.map((r) => r.id);
}
