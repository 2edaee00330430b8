/**
 * The contract between jobvisor and a task module.
 *
 * A task is a module whose default export is `async (payload, ctx) => unknown`.
 * It runs inside a Piscina worker thread, never on the supervisor's main thread.
 */
import type { Logger } from 'pino';
import type pg from 'pg';

/** What a task knows about the job it is running. */
export interface JobInfo {
  id: string;
  kind: string;
  queue: string;
  /** 1 on the first attempt. */
  attempt: number;
  maxAttempts: number;
}

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
}

export interface TaskConfig {
  thumbnails: { dir: string; format: string; sourceRoots?: string[] };
  reports: { dir: string };
  schema: string;
}

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
}
