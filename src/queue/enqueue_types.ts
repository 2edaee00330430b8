/** The public shapes of enqueue() and enqueueMany(): options, results and typed payloads. */

/**
 * Payload types of known kinds. Augment it to type your own tasks:
 * `declare module 'jobvisor' { interface TaskPayloads { resize: { id: number } } }`
 */
export interface TaskPayloads {
  welcome_email: { user_id: number };
  thumbnail: { source: string; widths: number[]; outDir?: string };
  daily_report: { day?: string; timezone?: string };
}

export type PayloadOf<K extends string> = K extends keyof TaskPayloads ? TaskPayloads[K] : unknown;

export interface EnqueueOptions {
  /** Default: the task's `options.queue` if this process knows it (see task_defaults.ts), else "default". */
  queue?: string;
  /** Lower runs first; default 0. */
  priority?: number;
  /** Not before this time (Date or ISO 8601 text). */
  runAt?: Date | string;
  /** Not before now + delay (ms, or a duration such as "10s"). */
  delay?: number | string;
  maxAttempts?: number;
  /** At most one job per (kind, uniqueKey) while the row exists; a duplicate is skipped. */
  uniqueKey?: string;
  /** Groups jobs for the queue's per-key limits (perKeyConcurrency, rateLimit.perKey); column concurrency_key. */
  concurrencyKey?: string;
  /**
   * Job ids this job waits for: it stays `blocked` until every one is done
   * (README "Workflows"). A missing id is an InputError; nothing is written.
   */
  dependsOn?: Array<string | number | bigint>;
  /** When a parent is dead-lettered or cancelled: cancel this job (default, cascading) or run it anyway. */
  onParentFailure?: 'cancel' | 'run';
  /** Schema of the jobs table; default "jobvisor". */
  schema?: string;
  /** Largest payload accepted, in bytes of JSON; default 1 MiB. */
  maxPayloadBytes?: number;
}

export interface EnqueueResult {
  /** The new job's id, or the existing job's id when a duplicate was skipped. */
  id: string | null;
  /** True when a job with the same kind and uniqueKey already existed. */
  duplicate: boolean;
}

export interface JobSpec<K extends string = string> extends Omit<
  EnqueueOptions,
  'schema' | 'maxPayloadBytes' | 'dependsOn'
> {
  kind: K;
  /** Parent ids, or `{ index: n }` for the n-th job of the same call (n below this job's own index). */
  dependsOn?: Array<string | number | bigint | { index: number }>;
  payload?: PayloadOf<K>;
}

/**
 * A job of an enqueueMany batch, checked against its own kind: the union of
 * JobSpec<K> over the kinds of the batch, so each element's payload must fit
 * its kind (a plain JobSpec<K> over a union of kinds would accept any payload).
 */
export type JobSpecOf<K extends string> = K extends string ? JobSpec<K> : never;
