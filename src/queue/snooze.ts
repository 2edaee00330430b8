/**
 * Snoozes: a task put its job back (ctx.snooze, SnoozeError) to run again at
 * now + delay. Fenced like every write after a claim (claim token, owner,
 * running), so a run that lost its claim changes nothing.
 *
 * A snooze is not an attempt: the claim's increment of `attempts` is given back
 * (never below 0) and `snoozes` counts it instead, with an entry in the job's
 * history (append_snooze, migration 007). A job that has already snoozed
 * `maxSnoozes` times is dead-lettered instead, with a last_error naming
 * jobs.maxSnoozes: a task that snoozes forever would otherwise never end.
 * Delays are looked up by fence key, not id: two claims of one job are two keys.
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';

const SNOOZE_JOBS = planned(
  'snooze_jobs',
  `
WITH s AS (
  SELECT j.id, j.snoozes >= $4::int AS over,
         coalesce($6::timestamptz, now()) AS at,
         coalesce($6::timestamptz, now())
           + ($3::float8[])[array_position($2::bigint[], j.lease_token)] * interval '1 millisecond' AS until
    FROM jobvisor.jobs AS j
   WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $5
     AND j.lease_token = ANY($2::bigint[])
     FOR UPDATE OF j
)
UPDATE jobvisor.jobs AS j
   SET status = CASE WHEN s.over THEN 'failed' ELSE 'pending' END,
       attempts = CASE WHEN s.over THEN j.attempts ELSE greatest(j.attempts - 1, 0) END,
       snoozes = CASE WHEN s.over THEN j.snoozes ELSE j.snoozes + 1 END,
       run_at = CASE WHEN s.over THEN j.run_at ELSE s.until END,
       finished_at = CASE WHEN s.over THEN s.at END,
       locked_until = NULL,
       last_error = CASE WHEN s.over THEN format(
           'TooManySnoozes: the job asked to snooze after %s snoozes, the most jobs.maxSnoozes (%s) allows, so it was dead-lettered',
           j.snoozes, $4::int) ELSE j.last_error END,
       errors = CASE WHEN s.over THEN jobvisor.append_error(j.errors, j.attempts, s.at, format(
           'TooManySnoozes: the job asked to snooze after %s snoozes, the most jobs.maxSnoozes (%s) allows, so it was dead-lettered',
           j.snoozes, $4::int))
         ELSE jobvisor.append_snooze(j.errors, j.attempts, s.at, s.until) END
  FROM s
 WHERE j.id = s.id
RETURNING j.id, j.status, CASE WHEN s.over THEN j.last_error END AS error`,
);

/** Snoozed runs as parallel arrays: ids[i], claimed with tokens[i], back in delaysMs[i]. */
export interface Snoozes {
  ids: string[];
  tokens: string[];
  delaysMs: number[];
}

/**
 * Puts snoozed jobs back to pending at now + delay without using an attempt,
 * or dead-letters those already snoozed `maxSnoozes` times.
 * @returns the ids written with their new status (and the dead letter's last_error); a missing id was fenced off.
 */
export async function snoozeJobs(
  store: Store,
  owner: string,
  s: Snoozes,
  maxSnoozes: number,
  now: Now = null,
): Promise<Array<{ id: string; status: 'pending' | 'failed'; error: string | null }>> {
  if (s.ids.length === 0) return [];
  return run(store, SNOOZE_JOBS, [intArray(s.ids), intArray(s.tokens), s.delaysMs, maxSnoozes, owner, now]);
}
