/**
 * Recording outcomes, in batches, every write fenced: a row changes only while it
 * is still `running` under the same owner and the same claim token. A supervisor
 * that lost its lease (frozen, cut off, reaped, or the job was cancelled and
 * re-queued meanwhile) therefore changes nothing when it wakes.
 *
 * Shape: no join. The rows are found through `id = ANY($ids)` (an index scan)
 * and the fence is checked against `lease_token = ANY($tokens)`, which
 * PostgreSQL evaluates with a hash table. Every claim draws its token from one
 * sequence, so a token names exactly one claim of one job: the token alone is
 * the fence (it used to be the text 'id:token', built and hashed per row; the
 * bigint compare made a batch of 1,000 completions about 5 % cheaper).
 * Joining `unnest($ids, $tokens)` instead let the planner, misled by stale
 * statistics on running rows, pick a nested loop that rescanned the array for
 * every row: 250 completions took 25–35 ms instead of 2.5 ms in a running
 * benchmark (auto_explain).
 */
import { DROP_STEPS } from './drop_steps.ts';
import { intArray, planned, run, type Now, type Store } from './sql.ts';
import type { Fence } from './types.ts';

// Workflow parents (has_dependents) release their children in the same
// statement, so in the same transaction as their done write (workflow.ts).
// settle_parents is STRICT: a batch without such rows aggregates to NULL and
// the function is never called, so plain jobs pay one NULL column, no statement.
const SETTLE_DONE = `jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents)) AS released`;

// Answers with a count; the ids come back only when some row was fenced off
// (rare), so a batch of a thousand completions parses one row, not a thousand.
const COMPLETE_JOBS = planned(
  'complete_jobs',
  `
WITH u AS (
  UPDATE jobvisor.jobs AS j
     SET status = 'done', locked_until = NULL, finished_at = coalesce($4::timestamptz, now()), result = NULL
   WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $3
     AND j.lease_token = ANY($2::bigint[])
  RETURNING j.id, j.has_dependents
)
SELECT count(*)::int AS written,
       CASE WHEN count(*) < cardinality($1::bigint[]) THEN array_agg(id)::text[] END AS ids,
       ${SETTLE_DONE}
  FROM u`,
);

// The same write for a batch where some task returned a value or left a last
// progress value: both arrays are aligned with the tokens, and each row finds
// its own by its token (not its id: two claims of one job are two tokens).
// A batch of tasks that return nothing never pays for it (COMPLETE_JOBS).
const COMPLETE_JOBS_REPORTED = planned(
  'complete_jobs_reported',
  `
WITH u AS (
  UPDATE jobvisor.jobs AS j
     SET status = 'done', locked_until = NULL, finished_at = coalesce($4::timestamptz, now()),
         result = ($5::jsonb[])[array_position($2::bigint[], j.lease_token)],
         progress = coalesce(($6::jsonb[])[array_position($2::bigint[], j.lease_token)], j.progress)
   WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $3
     AND j.lease_token = ANY($2::bigint[])
  RETURNING j.id, j.has_dependents
)
SELECT count(*)::int AS written,
       CASE WHEN count(*) < cardinality($1::bigint[]) THEN array_agg(id)::text[] END AS ids,
       ${SETTLE_DONE}
  FROM u`,
);

// Keeping none (cleanup.retention 0): a done job without dependents is deleted
// in its completion statement, fenced like the update. The row's life is then
// an insert, the claim's update and this delete: no done version with its two
// index entries, no cleanup delete of it later and no vacuum of either. A row
// with dependents (has_dependents) is not deleted here: it takes the update
// above, so its children can read its result (ctx.parents()) and cleanup keeps
// it until they finish. An id this leaves is either such a row, one that gained
// a dependent meanwhile, or fenced off: completeJobs sends those through the update.
// Its steps and signals (has_steps) go in the same statement (drop_steps.ts).
const DELETE_DONE_JOBS = planned(
  'delete_done_jobs',
  `
WITH gone AS (
  DELETE FROM jobvisor.jobs AS j
   WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $3
     AND j.lease_token = ANY($2::bigint[]) AND j.has_dependents IS NOT TRUE
  RETURNING j.id, j.has_steps
), ${DROP_STEPS}
SELECT count(*)::int AS written,
       CASE WHEN count(*) < cardinality($1::bigint[]) THEN array_agg(id)::text[] END AS ids
  FROM gone`,
);

/**
 * What the runs of a done batch reported, aligned with its ids: each task's
 * return value and its last unwritten progress value, as JSON text (null: none).
 */
export interface Reports {
  results: Array<string | null>;
  progress: Array<string | null>;
}

/**
 * Marks jobs done (ids[i] claimed with tokens[i]), storing what they reported
 * when `reports` is given (result NULL otherwise). With `keep` false, done jobs
 * without dependents are deleted instead (their reports with them).
 * @returns the ids that were NOT written: fenced off, this owner no longer holds that claim.
 */
export async function completeJobs(
  store: Store,
  owner: string,
  ids: string[],
  tokens: string[],
  now: Now = null,
  reports?: Reports,
  keep = true,
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  if (!keep) return completeKeepingNone(store, owner, ids, tokens, now, reports);
  const values: unknown[] = [intArray(ids), intArray(tokens), owner, now];
  if (reports) values.push(reports.results, reports.progress);
  const [row] = await run<{ written: number; ids: string[] | null }>(
    store,
    reports ? COMPLETE_JOBS_REPORTED : COMPLETE_JOBS,
    values,
  );
  if (!row || row.written === ids.length) return new Set();
  const written = new Set(row.ids ?? []);
  return new Set(ids.filter((id) => !written.has(id)));
}

async function completeKeepingNone(
  store: Store,
  owner: string,
  ids: string[],
  tokens: string[],
  now: Now,
  reports: Reports | undefined,
): Promise<Set<string>> {
  const [row] = await run<{ written: number; ids: string[] | null }>(store, DELETE_DONE_JOBS, [
    intArray(ids),
    intArray(tokens),
    owner,
  ]);
  if (!row || row.written === ids.length) return new Set();
  const deleted = new Set(row.ids ?? []);
  const left: number[] = [];
  ids.forEach((id, i) => deleted.has(id) || left.push(i));
  const pick = <T>(xs: T[]) => left.map((i) => xs[i] as T);
  return completeJobs(
    store,
    owner,
    pick(ids),
    pick(tokens),
    now,
    reports && { results: pick(reports.results), progress: pick(reports.progress) },
  );
}

// The database decides retry or dead letter with the row's current max_attempts.
// The history entry also keeps this attempt's start and owner (migration 016):
// in SET, j.started_at and j.locked_by are still the attempt's own.
// A dead letter with dependents settles them in the same statement (cancelled,
// or released to run anyway: settle_parents in migration 017).
const FAIL_JOBS = planned(
  'fail_jobs',
  `
WITH u AS (
UPDATE jobvisor.jobs AS j
   SET status = CASE WHEN ($3::boolean[])[array_position($1::bigint[], j.id)] OR j.attempts >= j.max_attempts THEN 'failed' ELSE 'pending' END,
       run_at = CASE WHEN ($3::boolean[])[array_position($1::bigint[], j.id)] OR j.attempts >= j.max_attempts THEN j.run_at
                     ELSE coalesce($7::timestamptz, now()) + ($4::float8[])[array_position($1::bigint[], j.id)] * interval '1 millisecond' END,
       finished_at = CASE WHEN ($3::boolean[])[array_position($1::bigint[], j.id)] OR j.attempts >= j.max_attempts THEN coalesce($7::timestamptz, now()) END,
       locked_until = NULL,
       last_error = ($5::text[])[array_position($1::bigint[], j.id)],
       errors = jobvisor.attempt_started(
                  jobvisor.append_error(j.errors, j.attempts, coalesce($7::timestamptz, now()), ($5::text[])[array_position($1::bigint[], j.id)],
                                        ($8::text[])[array_position($1::bigint[], j.id)]),
                  j.started_at, j.locked_by)
 WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $6
   AND j.lease_token = ANY($2::bigint[])
RETURNING j.id, j.status, j.has_dependents
), settled AS (
  SELECT jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents AND status = 'failed')) FROM u
)
SELECT u.id, u.status FROM u, settled`,
);

/**
 * Records failed attempts: each becomes a retry at now + delayMs, or a dead
 * letter (`failed`) when permanent or out of attempts.
 * Returns the ids written with their new status.
 */
export async function failJobs(
  store: Store,
  owner: string,
  f: Failures,
  now: Now = null,
): Promise<Array<{ id: string; status: 'pending' | 'failed' }>> {
  if (f.ids.length === 0) return [];
  const stacks = f.stacks ?? f.ids.map(() => null);
  return run(store, FAIL_JOBS, [
    intArray(f.ids),
    intArray(f.tokens),
    f.permanent,
    f.delaysMs,
    f.errors,
    owner,
    now,
    stacks,
  ]);
}

/** Failed attempts as parallel arrays: ids[i], claimed with tokens[i], failed with errors[i]. */
export interface Failures {
  ids: string[];
  tokens: string[];
  /** Dead-letter now whatever attempts remain. */
  permanent: boolean[];
  /** Retry after this many ms (ignored when the job is dead-lettered). */
  delaysMs: number[];
  errors: string[];
  /** Stack frames of each failure (null: none), kept in its `errors` entry; none when absent. */
  stacks?: Array<string | null>;
}

// Handing back gives the attempt back: the job did not fail, this supervisor left.
const RELEASE_JOBS = planned(
  'release_jobs',
  `
UPDATE jobvisor.jobs AS j
   SET status = 'pending', attempts = greatest(j.attempts - 1, 0), locked_until = NULL
 WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $3
   AND j.lease_token = ANY($2::bigint[])
RETURNING j.id`,
);

/** Returns claimed jobs to pending without using up their attempt (shutdown). */
export async function releaseJobs(store: Store, owner: string, jobs: Fence[]): Promise<string[]> {
  if (jobs.length === 0) return [];
  const rows = await run<{ id: string }>(store, RELEASE_JOBS, [
    intArray(jobs.map((j) => j.id)),
    intArray(jobs.map((j) => j.token)),
    owner,
  ]);
  return rows.map((r) => r.id);
}
