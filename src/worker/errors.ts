/**
 * Errors a task can throw to steer what happens to its job.
 *
 * They cross the thread boundary as plain data, so jobvisor recognises them by
 * their `permanent` / `retryInMs` fields, not by `instanceof`: a task may also set
 * those fields on any error of its own.
 */

/** The job cannot succeed by retrying (missing input, corrupt file): dead-letter it now. */
export class PermanentError extends Error {
  readonly permanent = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/** Retry this job after a specific delay instead of the configured backoff. */
export class RetryLaterError extends Error {
  readonly retryInMs: number;
  constructor(message: string, retryInMs: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryLaterError';
    if (!Number.isFinite(retryInMs) || retryInMs < 0)
      throw new RangeError(`retryInMs must be a finite number >= 0, got ${retryInMs}`);
    this.retryInMs = retryInMs;
  }
}
