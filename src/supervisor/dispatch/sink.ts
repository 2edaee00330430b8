/**
 * Where the dispatcher's decisions go: the completer (OutcomeSink, an interface
 * the completer implements) and, for dropped runs, the 'lease:lost' event.
 */
import type { ClaimedJob } from '../../queue/types.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Outcome } from './outcome.ts';

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
 * Where outcomes go: the completer. Each run gets at most one call; a run whose
 * lease was lost gets none (nothing may be written for it).
 */
export interface OutcomeSink {
  done(job: ClaimedJob, runMs: number, report?: Report): void;
  failed(job: ClaimedJob, failure: Failure): void;
  /** The task snoozed: back to pending after delayMs without using an attempt. */
  snoozed(job: ClaimedJob, delayMs: number, runMs: number): void;
  release(job: ClaimedJob, reason: string): void;
}

/** Hands a decided outcome to the sink; a dropped run is only reported as 'lease:lost'. */
export function report(outcome: Outcome, job: ClaimedJob, sink: OutcomeSink, events: SupervisorEvents): void {
  switch (outcome.type) {
    case 'done':
      sink.done(job, outcome.runMs, outcome.report);
      break;
    case 'snooze':
      sink.snoozed(job, outcome.delayMs, outcome.runMs);
      break;
    case 'retry':
    case 'dead':
      sink.failed(job, outcome.failure);
      break;
    case 'release':
      sink.release(job, outcome.reason);
      break;
    case 'drop':
      events.emit('lease:lost', { jobs: [job] });
      break;
  }
}
