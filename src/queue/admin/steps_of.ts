/**
 * A job's durable steps, sleeps and waits as `jobs show` prints them
 * (job_steps, migration 027), in the order they were reached.
 */
import { planned, run, type Store } from '../sql.ts';
import { time, type Time } from './types.ts';

/** A result is shown folded to this many characters of JSON. */
export const FOLDED_RESULT_CHARS = 200;

// By job_steps' primary key (job_id, name): one job's rows, at most
// jobs.maxSteps of them, sorted here. The result is folded in the database,
// so a page of large results never crosses the wire whole.
const STEPS_OF = planned(
  'admin_steps_of',
  `
SELECT name, kind, attempt, started_at, finished_at, wake_at,
       extract(epoch FROM finished_at - started_at) * 1000 AS ms,
       left(result::text, ${FOLDED_RESULT_CHARS + 1}) AS result
  FROM jobvisor.job_steps
 WHERE job_id = $1::bigint
 ORDER BY started_at, name
 LIMIT 100000`,
);

/** One record of a job: a step (its result folded), a sleep (its wake time) or a wait (its deadline). */
export interface StepRow {
  name: string;
  kind: 'step' | 'sleep' | 'wait';
  attempt: number;
  started_at: Time;
  finished_at: Time | null;
  wake_at: Time | null;
  /** finished_at − started_at, ms (null: not finished). */
  ms: number | null;
  /** The result's JSON, at most FOLDED_RESULT_CHARS characters then `…` (null: none). */
  result: string | null;
}

/** The steps, sleeps and waits job `id` recorded, in the order reached. */
export async function stepsOf(store: Store, id: string): Promise<StepRow[]> {
  const rows = await run<StepRow & { ms: string | null }>(store, STEPS_OF, [id]);
  return rows.map((r) => ({
    ...r,
    started_at: time(r.started_at) as Time,
    finished_at: time(r.finished_at),
    wake_at: time(r.wake_at),
    ms: r.ms === null ? null : Number(r.ms),
    result:
      r.result !== null && r.result.length > FOLDED_RESULT_CHARS
        ? `${r.result.slice(0, FOLDED_RESULT_CHARS)}…`
        : r.result,
  }));
}
