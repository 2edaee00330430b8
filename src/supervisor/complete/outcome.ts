/**
 * What a run's outcome can be: decided by the dispatcher (dispatch/outcome.ts),
 * recorded by the completer, which writes every outcome but `drop`.
 */
import type { ClaimedJob } from '../../queue/types.ts';
import type { Park } from '../../worker/protocol.ts';

/** A failed run, as the completer records it. */
export interface Failure {
  runMs: number;
  error: string;
  /** Dead-letter now, whatever attempts remain. */
  permanent: boolean;
  /** Retry after this long instead of the configured backoff (null: backoff). */
  retryInMs: number | null;
  /** The task error's stack frames, when it had any (recorded in the `errors` history). */
  stack?: string;
}

/** What a successful run reported (JSON text): its return value and its last progress value. */
export interface Report {
  result?: string;
  progress?: string;
}

/**
 * Retry and dead are one write (the failed writer): the database decides
 * between them with the row's current max_attempts; the label is the same
 * rule for callers that want to know. `drop` writes nothing: another owner may
 * hold the job (its lease was lost).
 */
export type Outcome =
  | { type: 'done'; runMs: number; report?: Report }
  | { type: 'snooze'; runMs: number; delayMs: number }
  | { type: 'sleep'; runMs: number; park: Park }
  | { type: 'wait'; runMs: number; park: Park }
  | { type: 'retry'; failure: Failure }
  | { type: 'dead'; failure: Failure }
  | { type: 'release'; reason: string }
  | { type: 'drop' };

/** The outcomes the completer writes. */
export type Recorded = Exclude<Outcome, { type: 'drop' }>;

/** A job's outcome in the write of a batch call. */
export interface CallEntry {
  job: ClaimedJob;
  outcome: Recorded;
}

/** Where decided outcomes go (the completer): each run's at most once. */
export interface OutcomeSink {
  record(job: ClaimedJob, outcome: Recorded): void;
  /** The outcomes of one batch call, written together (without it: one record() each). */
  recordCall?(entries: CallEntry[]): void;
}
