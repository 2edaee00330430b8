/**
 * The outcome of a run: a pure decision, from what happened on the thread and
 * what the dispatcher had asked of the run.
 *
 * Inputs:
 *   result — how the run ended: the task returned (success), the task threw
 *            (task-error, with its permanent / retryInMs hints), or its thread
 *            died under it (thread-died: crash, exit, out of memory), naming
 *            the run whose stop made the dispatcher terminate the thread, if any;
 *   state  — why the dispatcher stopped the run, if it did (timeout, lease-lost,
 *            shutdown), its timeout, and its attempt numbers.
 *
 * Rules, in order:
 *   1. lease-lost → drop: another owner may hold the job; nothing is written.
 *   1a. the thread reached a rate-limited job after its start window (lateMs)
 *      → release: its task never ran, and starting it would bunch with the
 *      on-time starts; claimed again, it gets a new slot, no attempt used.
 *   2. success → done, even after a stop request the task finished anyway.
 *   2a. the task slept or waited (ctx.sleep, ctx.waitFor) → sleep / wait:
 *      pending at its wake time, or parked until its signal or deadline,
 *      using no attempt, even after a shutdown request (the run ended
 *      cleanly at a point it will resume from); not after a timeout (4).
 *   3. shutdown → release: the job goes back without using an attempt.
 *   4. timeout → a failure naming the timeout (and the killed thread, if so),
 *      even when the task snoozed on its way out: a timed-out run used its attempt.
 *   4a. the task snoozed (SnoozeError) → snooze: back to pending after its
 *      delay without using an attempt (the completer's SQL dead-letters a job
 *      past jobs.maxSnoozes).
 *   5. thread killed to stop another run → release (not this job's fault).
 *   6. task error / thread death → a failure; retry or dead as the completer's
 *      SQL will decide it (permanent, or attempts used up → dead).
 * Both retry and dead reach the completer's failed writer: the database
 * decides with the row's current max_attempts; the label here is the same rule
 * for callers that want to know (complete/outcome.ts).
 */
import type { DurableReport, Park } from '../../worker/protocol.ts';
import { payloadTooLarge } from '../../worker/payload.ts';
import type { Failure, Outcome } from '../complete/outcome.ts';

export type StopReason = 'timeout' | 'lease-lost' | 'shutdown';

export type RunResult =
  | { type: 'success'; runMs: number; result?: string; progress?: string; durable?: DurableReport }
  | { type: 'task-error'; runMs: number; error: TaskFailure; durable?: DurableReport }
  | { type: 'thread-died'; runMs: number; cause: unknown; killedToStop: string | null; durable?: undefined };

/** What a task's error tells the supervisor. */
export interface TaskFailure {
  name: string;
  message: string;
  permanent: boolean;
  retryInMs: number | null;
  /** The task snoozed: back after this many ms, no attempt used. */
  snoozeMs?: number;
  /** Frame lines of the error's stack (worker/convert.ts stackFrames). */
  stack?: string;
  /** The task was not started: its start window had passed by this many ms. */
  lateMs?: number;
  /** The task slept or waited (ctx.sleep, ctx.waitFor). */
  park?: Park;
}

/** What the dispatcher knows of the run (a ledger Run is one). */
export interface RunState {
  stop?: StopReason;
  timeoutMs: number;
  job: { attempt: number; maxAttempts: number };
}

export function decideOutcome(result: RunResult, state: RunState): Outcome {
  if (state.stop === 'lease-lost') return { type: 'drop' };
  if (result.type === 'task-error' && result.error.lateMs !== undefined)
    return { type: 'release', reason: 'reached its thread past its rate-limit start slot' };
  if (result.type === 'success') {
    if (result.result === undefined && result.progress === undefined) return { type: 'done', runMs: result.runMs };
    return { type: 'done', runMs: result.runMs, report: { result: result.result, progress: result.progress } };
  }
  const park = result.type === 'task-error' ? result.error.park : undefined;
  if (park && state.stop !== 'timeout') return { type: park.kind, runMs: result.runMs, park };
  if (state.stop === 'shutdown') return { type: 'release', reason: 'aborted by shutdown' };
  if (state.stop === 'timeout') {
    const killed = result.type === 'thread-died' ? ' and did not stop; its worker thread was terminated' : '';
    return failed(state, {
      runMs: result.runMs,
      error: `TimeoutError: job timed out after ${state.timeoutMs} ms${killed}`,
      permanent: false,
      retryInMs: null,
    });
  }
  if (result.type === 'task-error' && result.error.snoozeMs !== undefined)
    return { type: 'snooze', runMs: result.runMs, delayMs: result.error.snoozeMs };
  if (result.type === 'task-error') {
    const { name, message, permanent, retryInMs, stack } = result.error;
    const failure: Failure = { runMs: result.runMs, error: `${name}: ${message}`, permanent, retryInMs };
    if (stack !== undefined) failure.stack = stack;
    return failed(state, failure);
  }
  if (result.killedToStop !== null)
    return { type: 'release', reason: `thread terminated to stop job ${result.killedToStop}` };
  return failed(state, {
    runMs: result.runMs,
    error: describeThreadDeath(result.cause),
    permanent: false,
    retryInMs: null,
  });
}

function failed(state: RunState, failure: Failure): Outcome {
  const dead = failure.permanent || state.job.attempt >= state.job.maxAttempts;
  return { type: dead ? 'dead' : 'retry', failure };
}

/** A job whose payload is over jobs.maxPayloadBytes is never run: a dead letter at once (permanent). */
export function decideOversized(
  size: { payloadBytes: number | null; payloadStoredBytes: number | null },
  maxPayloadBytes: number,
): Outcome {
  return { type: 'dead', failure: oversized(size, maxPayloadBytes) };
}

/** The failure of a job whose payload is over jobs.maxPayloadBytes: it is never run. */
export function oversized(
  size: { payloadBytes: number | null; payloadStoredBytes: number | null },
  maxPayloadBytes: number,
): Failure {
  return {
    runMs: 0,
    error: `PayloadTooLarge: ${payloadTooLarge(size, maxPayloadBytes)}`,
    permanent: true,
    retryInMs: null,
  };
}

/** The cause of a session's end, as the 'thread:died' event names it. */
export function deathCause(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err === null || err === undefined) return 'session ended early';
  return typeof err === 'string' ? err : JSON.stringify(err);
}

/** The error recorded for a job whose thread died under it. */
export function describeThreadDeath(err: unknown): string {
  const e = err as { code?: string; message?: string } | null | undefined;
  if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY')
    return `WorkerOutOfMemory: the worker thread ran out of memory (${e.message ?? ''}); raise pool.maxOldGenerationSizeMb or make the task use less`;
  const message = e?.message ?? String(err);
  if (/exited|exit code/i.test(message))
    return `WorkerExited: the worker thread exited while running this job (${message}); did the task call process.exit()?`;
  return `WorkerCrashed: the worker thread died while running this job: ${message}`;
}
