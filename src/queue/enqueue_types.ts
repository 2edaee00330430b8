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
  /** Schema of the jobs table; default "jobvisor". */
  schema?: string;
  /** Largest payload accepted, in bytes of JSON; default 1 MiB. */
  maxPayloadBytes?: number;
  /** Jobs this one waits for: it stays `blocked` until every one is done (workflows). */
  dependsOn?: readonly string[];
  /** What a dead-lettered or cancelled parent does to this job: `cancel` it (default) or `run` it anyway. */
  onParentFailure?: 'cancel' | 'run';
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
  payload?: PayloadOf<K>;
  /** Ids of existing jobs, or `{ index }` of an earlier job of the same enqueueMany call. */
  dependsOn?: ReadonlyArray<string | { index: number }>;
}

/**
 * A job of an enqueueMany batch, checked against its own kind: the union of
 * JobSpec<K> over the kinds of the batch, so each element's payload must fit
 * its kind (a plain JobSpec<K> over a union of kinds would accept any payload).
 */
export type JobSpecOf<K extends string> = K extends string ? JobSpec<K> : never;
