/**
 * The contract of a batch task (task option `batch`): one call of its default
 * export handles many jobs of its kind.
 *
 * ```ts
 * export const options = { batch: { maxSize: 100, maxWait: '200ms', key: 'tenant' } };
 * export default async (jobs: BatchTaskJob<{ tenant: string; to: string }>[], ctx: BatchContext) => {
 *   const sent = await provider.sendMany(jobs.map((j) => j.payload));
 *   return sent.map((s) => (s.ok ? { messageId: s.id } : new RetryLaterError(s.reason, 60_000)));
 * };
 * ```
 *
 * The function returns nothing (every job is done) or one entry per job, in
 * the order of `jobs`: an `Error` fails that job's attempt (a PermanentError,
 * RetryLaterError or SnoozeError means what it means for one job; any Error
 * with `permanent = true` is permanent), any other value marks it done and is
 * stored as its result. A throw fails every job of the call for that attempt.
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import type { BatchOptions } from './batch_options.ts';
import type { ParentJob, TaskConfig } from './types.ts';

export type { BatchOptions };

/** One job of a batch call. */
export interface BatchTaskJob<P = unknown> {
  readonly id: string;
  readonly kind: string;
  readonly queue: string;
  readonly payload: P;
  /** 1 on the first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /**
   * Stores a small JSON progress value (at most 4 KiB) on this job, as
   * ctx.progress() does for a one-job task: at most once a second per job.
   * @throws ReportError when the value is not JSON or over 4 KiB.
   */
  progress(value: unknown): void;
  /** This job's workflow parents (`dependsOn`), as ctx.parents() gives them. */
  parents(): Promise<ParentJob[]>;
}

/** What a batch call receives beside its jobs. */
export interface BatchContext {
  /** Fires on the call's timeout, on shutdown, or when every job's lease was lost; `signal.reason` says which. */
  signal: AbortSignal;
  /** pino child logger bound to the kind, queue and the call's job ids. */
  log: Logger;
  /** A small pool to the same database, shared by the thread's tasks. */
  db: pg.Pool;
  config: TaskConfig;
  /** The value of the batch key (options.batch.key) these jobs share; undefined without a key. */
  key: unknown;
  /** Puts every job of the call back after `delay` without using an attempt (throws a SnoozeError). */
  snooze(delay: string | number): never;
}

/** One job's outcome in a batch call's answer: a value (done, stored as its result) or an Error (a failure). */
export type BatchOutcome<R = unknown> = R | Error;

/** A batch task's default export. */
export type BatchTask<P = unknown, R = unknown> = (
  jobs: Array<BatchTaskJob<P>>,
  ctx: BatchContext,
) => void | Array<BatchOutcome<R>> | Promise<void | Array<BatchOutcome<R>>>;
