/**
 * Durable steps, as the worker thread reads and writes them (ctx.step, and the
 * wait decision of ctx.waitFor): table job_steps of migration 027.
 *
 * Every statement here is fenced on the run's claim: it reads or writes only
 * while the job's row is `running` under the run's lease_token. The token
 * alone names one claim of one job (a sequence draws it), so the owner is not
 * needed. Writes lock the row FOR SHARE in the same statement: a reaper's
 * re-claim, a cancel or a completion needs a stronger lock, so none can slip
 * between the check and the insert, and a run that lost its claim records
 * nothing. FOR SHARE rather than an update of the row: an update would give
 * the running row a new version per step (its heartbeat waits a moment for a
 * step's commit instead).
 */
import { intArray, planned, run, type Db, type Now, type Store } from './sql.ts';

// The records of a batch of runs, each read once per run on its first
// ctx.step, sleep or waitFor: a worker thread gathers the runs that ask in one
// turn of its event loop into one statement (worker/step_reads.ts), so 10,000
// runs resumed at once (a wave of sleepers, one commit of signals) are not
// 10,000 round trips through the thread's two ctx.db connections. Each run's
// records come as one JSON array (one row per held run, one JSON.parse in the
// thread), each record [name, kind, has result, result, finished, wake ms,
// started ms]: `has result` tells a SQL NULL (fn returned undefined) from JSON
// null. A run missing from the result no longer holds its claim. The first
// read of a job also flags it (has_steps), so whatever deletes the job deletes
// its records; later runs find the flag set and write nothing. The flag's
// update locks the rows of the first runs of a batch: a deadlock with another
// batched write of this supervisor's rows (the completer's) is retried by the
// caller. `id = ANY` and `lease_token = ANY` name each run exactly: a token is
// drawn from a sequence, so it belongs to one claim of one job.
//
// The supervisor reads them too, right after a claim, for the claimed jobs
// that have records (jobs.has_steps), and sends them to the thread with the
// job (supervisor/claim/claimed_steps.ts): a resumed run then starts with its
// records and sends no read of its own. There $4 caps what is sent: a job
// with more than CARRIED_STEPS_MAX records, or whose results are stored in
// more than $4 bytes, comes back held with `steps` NULL, and its run reads
// them itself, so neither the supervisor's main thread nor the message to
// the thread ever holds a job's large results (up to jobs.maxSteps ×
// jobs.maxStepResultBytes). The size check reads only the records' stored
// sizes (pg_column_size: a TOASTed value is not fetched). Runs read their own
// with $4 NULL: no cap.
/** Records of one job the supervisor sends its run at most (see LOAD_STEPS). */
export const CARRIED_STEPS_MAX = 64;

const LOAD_STEPS = planned(
  'load_steps',
  `
WITH held AS (
  SELECT j.id, j.has_steps FROM jobvisor.jobs AS j
   WHERE j.id = ANY ($1::bigint[]) AND j.lease_token = ANY ($2::bigint[]) AND j.status = 'running'
), flag AS (
  UPDATE jobvisor.jobs AS j SET has_steps = true
   WHERE j.id = ANY (ARRAY(SELECT held.id FROM held WHERE held.has_steps IS NULL)) AND j.has_steps IS NULL
)
SELECT held.id::text AS id,
       extract(epoch FROM coalesce($3::timestamptz, now())) * 1000 AS now_ms,
       CASE WHEN $4::bigint IS NULL
              OR (SELECT count(*) <= ${CARRIED_STEPS_MAX} AND coalesce(sum(pg_column_size(s.result)), 0) <= $4::bigint
                    FROM jobvisor.job_steps AS s WHERE s.job_id = held.id)
       THEN (SELECT coalesce(json_agg(json_build_array(s.name, s.kind, s.result IS NOT NULL, s.result,
                                                       s.finished_at IS NOT NULL, extract(epoch FROM s.wake_at) * 1000,
                                                       extract(epoch FROM s.started_at) * 1000)), '[]')
               FROM jobvisor.job_steps AS s
              WHERE s.job_id = held.id)::text END AS steps
  FROM held`,
);

/** A record of job_steps as a run loads it. */
export interface StepRecord {
  name: string;
  kind: 'step' | 'sleep' | 'wait';
  /** The JSON value recorded (undefined: fn returned undefined, or none yet). */
  result: unknown;
  /** A step or a decided wait. */
  finished: boolean;
  /** A sleep's wake time or a wait's deadline, ms since the epoch (null: none). */
  wakeMs: number | null;
  startedMs: number;
}

/** What a run loads: whether it still holds its claim, the database's time, and the job's records. */
export interface LoadedSteps {
  held: boolean;
  nowMs: number;
  records: StepRecord[];
}

type RecordTuple = [string, StepRecord['kind'], boolean, unknown, boolean, number | null, number];

/** A run's claim: job `id`, claimed with `token`. */
export interface StepClaim {
  id: string;
  token: string;
}

/** A run's row of LOAD_STEPS: its id, the database's clock (ms) and its records as JSON text (null: not sent). */
export interface StepsRow {
  id: string;
  now_ms: string;
  steps: string | null;
}

/**
 * The records of each run of `runs` that still holds its claim, as JSON text
 * (parse with recordsOf), in one statement; a run missing from the result no
 * longer holds its claim. With `capBytes`, a job whose records are more than
 * CARRIED_STEPS_MAX or store results in more than `capBytes` bytes comes back
 * with `steps` null.
 */
export async function loadStepsText(
  store: Store,
  runs: StepClaim[],
  capBytes: number | null,
  now: Now = null,
): Promise<StepsRow[]> {
  if (runs.length === 0) return [];
  return run<StepsRow>(store, LOAD_STEPS, [
    intArray(runs.map((r) => r.id)),
    intArray(runs.map((r) => r.token)),
    now,
    capBytes,
  ]);
}

/** The records of LOAD_STEPS' `steps` text. */
export function recordsOf(text: string): StepRecord[] {
  const tuples = JSON.parse(text) as RecordTuple[];
  return tuples.map(([name, kind, has, result, finished, wakeMs, startedMs]) => ({
    name,
    kind,
    result: has ? result : undefined,
    finished,
    wakeMs,
    startedMs,
  }));
}

/**
 * The records of each run in `runs` (in their order; `held` false and none
 * for a run that no longer holds its claim), in one statement.
 */
export async function loadStepsOf(db: Db, schema: string, runs: StepClaim[], now: Now = null): Promise<LoadedSteps[]> {
  if (runs.length === 0) return [];
  const rows = await loadStepsText({ db, schema }, runs, null, now);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const nowMs = rows.length > 0 ? Number(rows[0]?.now_ms) : Date.now();
  return runs.map((r) => {
    const row = byId.get(r.id);
    if (!row) return { held: false, nowMs, records: [] };
    return { held: true, nowMs: Number(row.now_ms), records: recordsOf(row.steps ?? '[]') };
  });
}

/** The records of job `id` for the run claimed with `token` (none when the claim is no longer held). */
export async function loadSteps(db: Db, schema: string, id: string, token: string, now: Now = null) {
  const [loaded] = await loadStepsOf(db, schema, [{ id, token }], now);
  return loaded as LoadedSteps;
}

// One finished step. started_at is the statement's time less fn's duration as
// the thread measured it, so start, end and duration come from one clock.
// ON CONFLICT DO NOTHING: the run loaded the job's records first and names
// are unique per run, so a conflict is a record this run did not load; the
// first record stays.
const RECORD_STEP = planned(
  'record_step',
  `
WITH held AS (
  SELECT j.id, j.attempts FROM jobvisor.jobs AS j
   WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.status = 'running'
     FOR SHARE
), t AS (SELECT coalesce($6::timestamptz, now()) AS now),
s AS (
  INSERT INTO jobvisor.job_steps (job_id, name, kind, result, attempt, started_at, finished_at)
  SELECT held.id, $3, 'step', $4::jsonb, held.attempts, t.now - $5::float8 * interval '1 millisecond', t.now
    FROM held, t
  ON CONFLICT (job_id, name) DO NOTHING
  RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM held) AS held, EXISTS (SELECT 1 FROM s) AS recorded`,
);

/**
 * Records step `name` of job `id` (claimed with `token`) with its result (JSON
 * text; null: none) and fn's duration in ms.
 * @returns false when the run no longer holds its claim: nothing was recorded.
 */
export async function recordStep(
  db: Db,
  schema: string,
  step: { id: string; token: string; name: string; result: string | null; ms: number },
  now: Now = null,
): Promise<boolean> {
  const [row] = await run<{ held: boolean }>({ db, schema }, RECORD_STEP, [
    step.id,
    step.token,
    step.name,
    step.result,
    step.ms,
    now,
  ]);
  return row?.held === true;
}
