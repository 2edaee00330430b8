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
import { planned, run, type Db, type Now } from './sql.ts';

// A run's records, read once per run on its first ctx.step, sleep or waitFor.
// One JSON array (one row, one JSON.parse in the thread), each record
// [name, kind, has result, result, finished, wake ms, started ms]: `has result`
// tells a SQL NULL (fn returned undefined) from JSON null. The first read of a
// job also flags it (has_steps), so whatever deletes the job deletes its
// records; later runs find the flag set and write nothing.
const LOAD_STEPS = planned(
  'load_steps',
  `
WITH held AS (
  SELECT j.id, j.has_steps FROM jobvisor.jobs AS j
   WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.status = 'running'
), flag AS (
  UPDATE jobvisor.jobs AS j SET has_steps = true
    FROM held
   WHERE j.id = held.id AND held.has_steps IS NULL
)
SELECT EXISTS (SELECT 1 FROM held) AS held,
       extract(epoch FROM coalesce($3::timestamptz, now())) * 1000 AS now_ms,
       (SELECT coalesce(json_agg(json_build_array(s.name, s.kind, s.result IS NOT NULL, s.result,
                                                  s.finished_at IS NOT NULL, extract(epoch FROM s.wake_at) * 1000,
                                                  extract(epoch FROM s.started_at) * 1000)), '[]')
          FROM jobvisor.job_steps AS s
         WHERE s.job_id = $1::bigint AND EXISTS (SELECT 1 FROM held))::text AS steps`,
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

/** The records of job `id` for the run claimed with `token` (none when the claim is no longer held). */
export async function loadSteps(db: Db, schema: string, id: string, token: string, now: Now = null) {
  const [row] = await run<{ held: boolean; now_ms: string; steps: string }>({ db, schema }, LOAD_STEPS, [
    id,
    token,
    now,
  ]);
  const tuples = JSON.parse(row?.steps ?? '[]') as RecordTuple[];
  return {
    held: row?.held === true,
    nowMs: Number(row?.now_ms),
    records: tuples.map(([name, kind, has, result, finished, wakeMs, startedMs]) => ({
      name,
      kind,
      result: has ? result : undefined,
      finished,
      wakeMs,
      startedMs,
    })),
  } satisfies LoadedSteps;
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

// A wait's outcome, decided once and recorded: the signal of its name when
// one has committed (visible to this statement), else the timeout when its
// deadline has passed, else nothing (the run parks: queue/wait.ts). The
// record, once finished, is never changed (the WHERE of DO UPDATE), so every
// later run returns the same. A signal committed while this statement waited
// for the row lock is not in its snapshot: the run then parks, and the park
// (which reads after its lock) finds the signal and makes the job pending at
// once.
const TAKE_WAIT = planned(
  'take_wait',
  `
WITH held AS (
  SELECT j.id, j.attempts FROM jobvisor.jobs AS j
   WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.status = 'running'
     FOR SHARE
), t AS (SELECT coalesce($4::timestamptz, now()) AS now),
sig AS (SELECT s.payload FROM jobvisor.job_signals AS s WHERE s.job_id = $1::bigint AND s.name = $3),
rec AS (
  SELECT w.wake_at, w.finished_at, w.result FROM jobvisor.job_steps AS w
   WHERE w.job_id = $1::bigint AND w.name = $3 AND w.kind = 'wait'
), d AS (
  SELECT held.id, held.attempts, t.now,
         CASE WHEN EXISTS (SELECT 1 FROM sig) THEN jsonb_build_object('received', true, 'payload', (SELECT payload FROM sig))
              WHEN (SELECT wake_at FROM rec) <= t.now THEN '{"received": false}'::jsonb END AS result
    FROM held, t
), w AS (
  INSERT INTO jobvisor.job_steps AS s (job_id, name, kind, result, attempt, started_at, finished_at)
  SELECT d.id, $3, 'wait', d.result, d.attempts, d.now, d.now FROM d WHERE d.result IS NOT NULL
  ON CONFLICT (job_id, name) DO UPDATE SET result = excluded.result, finished_at = excluded.finished_at
   WHERE s.kind = 'wait' AND s.finished_at IS NULL
  RETURNING s.result
)
SELECT EXISTS (SELECT 1 FROM held) AS held,
       coalesce((SELECT result FROM w), (SELECT result FROM rec WHERE finished_at IS NOT NULL))::text AS result,
       extract(epoch FROM (SELECT now FROM t) - (SELECT wake_at FROM rec)) * 1000 AS past_deadline_ms`,
);

/** What a wait's decision found. */
export interface WaitDecision {
  held: boolean;
  /** `{ received, payload? }`, or null: neither a signal nor the deadline yet, so the run parks. */
  result: { received: true; payload: unknown } | { received: false } | null;
  /** How far past its deadline the wait is (ms; null: it has none yet). */
  pastDeadlineMs: number | null;
}

/** Decides and records the wait `name` of job `id` (claimed with `token`), if it can be decided now. */
export async function takeWait(
  db: Db,
  schema: string,
  wait: { id: string; token: string; name: string },
  now: Now = null,
): Promise<WaitDecision> {
  const [row] = await run<{ held: boolean; result: string | null; past_deadline_ms: string | null }>(
    { db, schema },
    TAKE_WAIT,
    [wait.id, wait.token, wait.name, now],
  );
  return {
    held: row?.held === true,
    result: row?.result ? (JSON.parse(row.result) as WaitDecision['result']) : null,
    pastDeadlineMs: row?.past_deadline_ms === null || row === undefined ? null : Number(row.past_deadline_ms),
  };
}
