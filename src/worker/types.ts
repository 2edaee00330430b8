/**
 * The contract between jobvisor and a task module.
 *
 * A task is a module whose default export is `async (payload, ctx) => unknown`.
 * It runs inside a Piscina worker thread, never on the supervisor's main thread.
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import type { ParentJob } from '../queue/parents.ts';
import type { BatchOptions } from './batch_options.ts';

export type { ParentJob };

/** What a task knows about the job it is running. */
export interface JobInfo {
  id: string;
  kind: string;
  queue: string;
  /** 1 on the first attempt. */
  attempt: number;
  maxAttempts: number;
}

/** Signal names a task waits for → the payload each carries (declared with defineTask). */
export type SignalMap = Record<string, unknown>;

/** What ctx.waitFor resolves to: the signal's payload, or `received: false` after the timeout. */
export type WaitResult<T = unknown> = { received: true; payload: T } | { received: false };

/**
 * The second argument of a task: the job it runs (`job`), an AbortSignal that
 * fires on timeout, lost lease or shutdown, a pino logger bound to the job, a
 * small pg.Pool to the same database (for idempotency records), and the calls
 * that steer the job (`snooze`, `progress`) or read its workflow parents.
 *
 * @example
 * ```ts
 * export default async function resize(payload: { imageId: string }, ctx: TaskContext) {
 *   ctx.signal.throwIfAborted();
 *   ctx.log.info({ attempt: ctx.job.attempt }, 'resizing');
 *   ctx.progress({ done: 0.5 });
 * }
 * ```
 */
export interface TaskContext<S extends SignalMap = SignalMap> {
  job: JobInfo;
  /** Fires on timeout, lost lease or shutdown; `signal.reason` says which. */
  signal: AbortSignal;
  /** pino child logger bound to jobId, kind, queue and attempt. */
  log: Logger;
  /** A small pool to the same database, shared by the tasks of this thread (for idempotency records). */
  db: pg.Pool;
  /** Resolved configuration sections a task may need (thumbnails, reports, ...). */
  config: TaskConfig;
  /**
   * Puts the job back to run again after `delay` ("30s", "5m", or ms) without
   * using an attempt. It throws a SnoozeError, so the task stops here; a task
   * that catches errors must let it through. Past jobs.maxSnoozes the job is
   * dead-lettered. A delay that is not a duration throws a RangeError instead.
   */
  snooze(delay: string | number): never;
  /**
   * Stores a small JSON progress value (at most 4 KiB) on the job, for
   * `jobs list --json` and the dashboard. Written at most once a second per
   * job (the newest value wins); never waits for the database.
   * @throws ReportError (ProgressNotJson, ProgressTooLarge) when the value is not JSON or over 4 KiB.
   */
  progress(value: unknown): void;
  /**
   * The parents of a workflow job (`dependsOn`): id, kind, status and result
   * of each, in id order; empty for a job without parents. Read through ctx.db,
   * a page of up to 1,000 parents (about 8 MiB of results) per statement.
   * @throws ParentsTooLargeError (permanent) when their results pass 128 MiB of
   *   JSON: read them with eachParent() instead.
   */
  parents(): Promise<ParentJob[]>;
  /**
   * The same parents one at a time, in id order, read a page at a time, so a
   * fan-in of any size holds one page in memory:
   * `for await (const parent of ctx.eachParent()) …`.
   */
  eachParent(): AsyncIterable<ParentJob>;
  /**
   * A durable step: runs `fn` and records its JSON result for this job under
   * `name`, fenced on this run's claim; resolves once the record has
   * committed. In a later run of the job (a retry, a run after a crash, a
   * sleep, a signal) a recorded step resolves to its recorded result without
   * calling `fn`. Both resolve to the recorded JSON value (a Date comes back as
   * its ISO text). A step that throws records nothing and fails the attempt
   * as usual. At least once: a crash between fn's side effect and the record
   * runs fn again, so fn gets `key` (`jobvisor:<job id>:<name>`, the same in
   * every run) to pass to an external API as its idempotency key.
   * @throws StepError: StepNameTaken (a name used twice in one run, or by
   *   another kind), TooManySteps (jobs.maxSteps), StepResultTooLarge
   *   (jobs.maxStepResultBytes), StepResultNotJson; those dead-letter the job.
   *   StepLeaseLost: the run lost its claim and recorded nothing.
   */
  step<T>(name: string, fn: (step: { key: string }) => T | Promise<T>): Promise<T>;
  /**
   * A durable sleep: the job leaves its thread and its slot and is due again
   * at `until` (a Date) or after `until` ("2h", "1d", ms) from when the task
   * first reached this sleep, using no attempt and no snooze. The task runs
   * again from the top; recorded steps return their results and this sleep
   * returns at once once its time has passed. A sleep already over (a past
   * Date, a zero delay) returns at once. Throws a ParkError to end the run:
   * let it through (a task that catches it still ends there).
   */
  sleep(name: string, until: string | number | Date): Promise<void>;
  /**
   * Waits for signal `name` (signal(db, jobId, name, payload), `jobvisor jobs
   * signal`, the dashboard) for at most `timeout` ("2d", ms, or a Date) from
   * when the task first reached this wait. The job is parked (status
   * `waiting`, no thread, no slot, no attempt) until the signal commits or the
   * timeout passes; the task then runs again from the top and this call
   * resolves to `{ received: true, payload }` or `{ received: false }`, the
   * same in every later run. A signal sent before the task gets here is kept
   * and received here.
   * @throws StepError WaitTimeoutInvalid when `timeout` is missing or not a duration or Date.
   */
  waitFor<N extends string>(
    name: N,
    options: { timeout: string | number | Date },
  ): Promise<WaitResult<N extends keyof S ? S[N] : unknown>>;
}

export interface TaskConfig {
  thumbnails: { dir: string; format: string; sourceRoots?: string[] };
  reports: { dir: string };
  schema: string;
}

/**
 * A task: the default export of a task module, `async (payload, ctx) => result`.
 * Returning marks the job done (the result is stored on it); throwing retries it
 * with backoff until its attempts are used up (PermanentError dead-letters it at
 * once, RetryLaterError picks the delay, SnoozeError puts it back without an attempt).
 */
export type Task<P = unknown, S extends SignalMap = SignalMap> = (payload: P, ctx: TaskContext<S>) => unknown;

/**
 * What a task module may declare about itself: `export const options = {...}`.
 * Read by the supervisor at start (and by `jobvisor enqueue`), never per job.
 */
export interface TaskOptions {
  /** CPU-bound: a job of this task never shares its worker thread, whatever its queue. */
  exclusiveThread?: boolean;
  /** The queue a job goes to when the caller names none (if the supervisor serves it). */
  queue?: string;
  /** The job's timeout ("10m", or ms), over the queue's and jobs.timeout. */
  timeout?: string | number;
  /** A batch task: one call gets many jobs of its kind (batch_types.ts, batch_options.ts). */
  batch?: BatchOptions;
}
