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

export type Task<P = unknown> = (payload: P, ctx: TaskContext) => Promise<unknown> | unknown;
