import type { MessagePort } from 'node:worker_threads';

/**
 * Messages between the supervisor's dispatcher and a worker thread.
 *
 * A *session* is one Piscina task: it holds a thread while jobs of one queue run
 * on it. The dispatcher sends jobs into the session through a MessagePort as
 * they arrive (several at once on queues whose jobs share a thread); the worker
 * answers with results, batched per turn of its event loop, and the session
 * ends when the dispatcher sends `end` and the last job has settled.
 */

export interface JobMessage {
  id: string;
  kind: string;
  queue: string;
  /** JSON text, parsed in the thread. */
  payload: string;
  attempt: number;
  maxAttempts: number;
}

export type ToWorker =
  | { type: 'run'; jobs: JobMessage[] }
  | { type: 'abort'; id: string; reason: 'timeout' | 'lease-lost' | 'shutdown' }
  | { type: 'end' };

export interface TaskError {
  name: string;
  message: string;
  stack?: string;
  permanent: boolean;
  retryInMs: number | null;
}

export interface JobResult {
  id: string;
  /** Echoed so a result can never be taken for another attempt of the same job. */
  attempt: number;
  ok: boolean;
  /** ms the task ran, measured in the thread. */
  runMs: number;
  error?: TaskError;
}

export type FromWorker = { type: 'results'; results: JobResult[] };

/** What the Piscina task receives: the session's port. */
export interface SessionTask {
  port: MessagePort;
}

/** Set once per thread through Piscina's workerData. */
export interface WorkerSetup {
  builtinTasksDir: string;
  userTasksDir: string;
  databaseUrl: string;
  dbPoolSize: number;
  logLevel: string;
  supervisor: string;
  taskConfig: {
    thumbnails: { dir: string; format: string };
    reports: { dir: string };
    schema: string;
  };
}
