/** Rows and arguments shared by the admin functions (CLI and dashboard). */
import type { QueueConfig } from '../presence.ts';

/**
 * Job statuses, as the table's CHECK constraint allows them; `blocked`: waiting
 * for its parents (a workflow); `waiting`: parked in ctx.waitFor until its
 * signal or its deadline (migration 028).
 */
export const JOB_STATUSES = ['pending', 'running', 'done', 'failed', 'cancelled', 'blocked', 'waiting'] as const;
/** A job's status: one of JOB_STATUSES. */
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * A timestamp column's value. Plain SQL can store 'infinity' and '-infinity'
 * (run_at = 'infinity': never due); pg hands those over as ±Infinity numbers,
 * which have no toISOString() and print as null in JSON, so they are named.
 */
export type Time = Date | 'infinity' | '-infinity';

export function time(value: unknown): Time | null {
  if (value === Number.POSITIVE_INFINITY) return 'infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-infinity';
  return value as Date | null;
}

/** A Time as text: ISO 8601, or 'infinity' / '-infinity'. */
export function timeText(value: Time): string {
  return value instanceof Date ? value.toISOString() : value;
}

/** A job as lists show it. */
export interface JobRow {
  id: string;
  queue: string;
  kind: string;
  status: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  run_at: Time;
  created_at: Time;
  started_at: Time | null;
  finished_at: Time | null;
  locked_by: string | null;
  unique_key: string | null;
  last_error: string | null;
  payload: unknown;
  /** The task's return value (JSON), set when it succeeded. */
  result: unknown;
  /** The last value the task gave ctx.progress(). */
  progress: unknown;
  /** Times the job snoozed (not counted in attempts). */
  snoozes: number;
}

/** One entry of a job's per-attempt error history (column `errors`). */
export interface AttemptError {
  attempt: number;
  at: string;
  /** Absent on a snooze entry. */
  error?: string;
  /** When this attempt started, and the supervisor that ran it (recorded by the completer since migration 016). */
  started?: string;
  owner?: string;
  /** The error's stack frames (`at …` lines, at most 4 KiB); absent when it had none. */
  stack?: string;
  /** A snooze (ctx.snooze / SnoozeError): put back until `until`, no attempt used. */
  snooze?: true;
  until?: string;
}

/** One entry of a job's history (getJob's `timeline`): created, each attempt's start and failure, snoozes, the end. */
export interface TimelineEvent {
  at: Time;
  event: 'created' | 'started' | 'failed' | 'snoozed' | 'finished';
  attempt?: number;
  error?: string;
  /** A failure's stack frames, when recorded. */
  stack?: string;
}

/** One attempt of a job, as the job page lists them. Unknown times and owners are null. */
export interface Attempt {
  attempt: number;
  started: Time | null;
  ended: Time | null;
  /** ended - started, in ms, when both are known. */
  durationMs: number | null;
  owner: string | null;
  /** running, done, failed (it will be retried or was the last), or cancelled. */
  outcome: string;
  error: string | null;
  stack: string | null;
}

/** Everything about one job, for `jobs show` and the job page. */
export interface JobDetail extends JobRow {
  errors: AttemptError[];
  locked_until: Time | null;
  lease_token: string | null;
  trace_context: Record<string, unknown> | null;
  /** created, each recorded failure (from `errors`), the latest start, finished; oldest first. */
  timeline: TimelineEvent[];
}

/**
 * Which jobs: every field given must match. Text fields are compared as
 * given (no wildcards); `payloadText` and `errorText` are substrings, case
 * insensitive, with `%` and `_` matched literally.
 */
export interface JobFilter {
  ids?: string[];
  status?: JobStatus;
  queue?: string;
  kind?: string;
  uniqueKey?: string;
  /** Text in the payload's JSON. */
  payloadText?: string;
  /**
   * Payload keys (at any depth, case-insensitive) whose values `payloadText`
   * never matches: the text is searched in the payload with those values
   * replaced by "[redacted]", as the dashboard shows it.
   */
  payloadRedact?: readonly string[];
  /** Text in last_error. */
  errorText?: string;
  /** Milliseconds: finished (or, unfinished, created) more than this long ago. */
  olderThan?: number;
  /** The first line of last_error, exactly (a dead-letter group). */
  errorPrefix?: string;
  /** Pending jobs only: true, those due now; false, those not yet due ("scheduled"). */
  due?: boolean;
}

/** Keyset page of a list in id DESC order: `after` is the last id of the previous page. */
export interface Page {
  limit: number;
  after?: string | null;
  /** The page of newer jobs: the first id of the page being left (takes precedence over `after`). */
  before?: string | null;
}

/** What a bulk call does to its jobs; ACTION_STATUSES lists the statuses each one changes. */
export type BulkAction = 'retry' | 'cancel' | 'runNow' | 'delete';

/**
 * The statuses each action applies to (see actions.ts for why). runNow
 * changes only pending jobs not yet due, and waiting jobs (their wait times
 * out now).
 */
export const ACTION_STATUSES: Readonly<Record<BulkAction, readonly JobStatus[]>> = {
  retry: ['failed', 'cancelled'],
  cancel: ['pending', 'running', 'blocked', 'waiting'],
  runNow: ['pending', 'waiting'],
  delete: ['pending', 'done', 'failed', 'cancelled', 'blocked', 'waiting'],
};

/** The jobs a bulk action applies to: these ids, or everything matching a filter. */
export type BulkTarget = { ids: string[] } | { filter: JobFilter };

/** How a bulk action (retryJobs, cancelJobs, runJobsNow, deleteJobs) walks its target: in batches, up to a limit. */
export interface BulkOptions {
  /** Rows per statement (default 1,000). */
  batchSize?: number;
  /** Change at most this many rows (default: all that match). */
  limit?: number;
  /** Called after each batch with the ids it changed. */
  onBatch?: (ids: string[]) => void;
}

/**
 * `matched`: rows of the target in a status the action applies to, when the
 * action reached them; `changed`: rows it changed (fewer when a row moved on
 * in between, e.g. was claimed). For an id target, `ids` lists the changed ids.
 */
export interface BulkResult {
  matched: number;
  changed: number;
  ids?: string[];
}

/** A live supervisor, as it last reported itself. */
export interface SupervisorRow {
  id: string;
  host: string;
  pid: number;
  version: string;
  /** Queue name → concurrency. */
  queues: Record<string, number>;
  /** Queue name → its settings as this supervisor loaded them ({} from supervisors older than migration 015). */
  queue_config: Record<string, QueueConfig>;
  started_at: Date;
  heartbeat_at: Date;
  in_flight: number;
  /** The cluster primary that started this process (null: a supervisor alone; before migration 019). */
  cluster_primary: string | null;
  cluster_slot: number | null;
}
