/**
 * What ctx.step, ctx.sleep and ctx.waitFor throw.
 *
 * `StepError` (a stable `code`) for a step the database cannot or must not
 * record. Those that a retry would meet again (a name used twice, too many
 * steps, a result too large or not JSON, a wait without a timeout) are
 * `permanent`: the job is dead-lettered with the message, and `jobs retry`
 * runs it again once the task is fixed, its recorded steps still returning
 * their results. `StepLeaseLost` is not: the run's claim was taken away
 * (reaped, cancelled) and nothing was recorded.
 *
 * `ParkError` ends a run that sleeps or waits: the supervisor writes the job
 * back (pending at its wake time, or waiting). It is not a failure and uses
 * no attempt. A task that catches it changes nothing: once a run has parked,
 * its outcome is the park, whatever the task does next, and every later
 * ctx.step, sleep or waitFor of the run throws it again.
 */
import type { Park, TaskError } from './protocol.ts';

export type { Park };

/** The stable codes of StepError (see the header for which are permanent). */
export type StepErrorCode =
  | 'StepNameInvalid'
  | 'StepNameTaken'
  | 'TooManySteps'
  | 'StepResultTooLarge'
  | 'StepResultNotJson'
  | 'WaitTimeoutInvalid'
  | 'StepLeaseLost';

/**
 * A step that could not or must not be recorded. `permanent` (every code but
 * StepLeaseLost) dead-letters the job; StepLeaseLost means this run no longer
 * holds the job and recorded nothing.
 */
export class StepError extends Error {
  readonly permanent: boolean;
  constructor(
    readonly code: StepErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = code;
    this.permanent = code !== 'StepLeaseLost';
  }
}

/** Ends a run that sleeps or waits (not a failure: no attempt is used). */
export class ParkError extends Error {
  constructor(readonly park: Park) {
    super(parkMessage(park));
    this.name = 'ParkError';
  }
}

function parkMessage(park: Park): string {
  return park.kind === 'sleep' ? `sleeping at "${park.name}"` : `waiting for signal "${park.name}"`;
}

/** The TaskError of a parked run, as it crosses to the supervisor (protocol.ts). */
export function parkedError(park: Park): TaskError {
  return { name: 'ParkError', message: parkMessage(park), permanent: false, retryInMs: null, park };
}
