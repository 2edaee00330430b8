/**
 * Sleeps: runs that called ctx.sleep(name, …) go back to pending, due at
 * their wake time, in one fenced statement per batch (the completer's slept
 * writer), with the sleep's record (job_steps, kind 'sleep', migration 027).
 *
 * A sleep is not an attempt and not a snooze: the claim's increment of
 * `attempts` is given back (never below 0) and `snoozes` is left alone, so
 * jobs.maxSnoozes does not bound sleeps. Being pending with a future run_at,
 * a sleeping job is woken by the claim path that wakes every delayed job (the
 * fetcher's next-due timer): it costs no thread, connection or timer of its
 * own, whatever the number of sleepers.
 *
 * The wake time is untilMs[i] when the run gave one (a Date, or the wake time
 * of a sleep already recorded by an earlier run), else now + delaysMs[i] by
 * the database's clock. A sleep already recorded keeps its record (ON
 * CONFLICT DO NOTHING): its wake time never moves.
 */
import { intArray, planned, run, type Now, type Store } from './sql.ts';

const SLEEP_JOBS = planned(
  'sleep_jobs',
  `
WITH t AS (SELECT coalesce($7::timestamptz, now()) AS now),
u AS (
  UPDATE jobvisor.jobs AS j
     SET status = 'pending', attempts = greatest(j.attempts - 1, 0), locked_until = NULL, has_steps = true,
         run_at = coalesce(to_timestamp(($5::float8[])[array_position($2::bigint[], j.lease_token)] / 1000),
                           t.now + ($6::float8[])[array_position($2::bigint[], j.lease_token)] * interval '1 millisecond')
    FROM t
   WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $3
     AND j.lease_token = ANY($2::bigint[])
  RETURNING j.id, j.run_at, j.attempts + 1 AS attempt,
            ($4::text[])[array_position($2::bigint[], j.lease_token)] AS name
), s AS (
  INSERT INTO jobvisor.job_steps (job_id, name, kind, attempt, started_at, wake_at)
  SELECT u.id, u.name, 'sleep', u.attempt, t.now, u.run_at FROM u, t
  ON CONFLICT (job_id, name) DO NOTHING
)
SELECT u.id, extract(epoch FROM u.run_at) * 1000 AS wake_ms FROM u`,
);

/** Sleeping runs as parallel arrays: ids[i], claimed with tokens[i], sleeping names[i]. */
export interface Sleeps {
  ids: string[];
  tokens: string[];
  names: string[];
  /** Wake time, ms since the epoch (null: now + delaysMs[i]). */
  untilMs: Array<number | null>;
  /** Used when untilMs[i] is null. */
  delaysMs: number[];
}

/**
 * Puts sleeping runs' jobs back to pending, due at their wake time, without
 * using an attempt, and records each sleep.
 * @returns the ids written with their wake time; a missing id was fenced off.
 */
export async function sleepJobs(
  store: Store,
  owner: string,
  s: Sleeps,
  now: Now = null,
): Promise<Array<{ id: string; wakeMs: number }>> {
  if (s.ids.length === 0) return [];
  const rows = await run<{ id: string; wake_ms: string }>(store, SLEEP_JOBS, [
    intArray(s.ids),
    intArray(s.tokens),
    owner,
    s.names,
    s.untilMs,
    s.delaysMs,
    now,
  ]);
  return rows.map((r) => ({ id: r.id, wakeMs: Number(r.wake_ms) }));
}
