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
export interface TaskContext {
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
export type Task<P = unknown> = (payload: P, ctx: TaskContext) => unknown;

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
