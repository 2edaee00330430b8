/**
 * Errors a task can throw to steer what happens to its job.
 *
 * They cross the thread boundary as plain data, so jobvisor recognises them by
 * their `permanent` / `retryInMs` / `snoozeMs` fields, not by `instanceof`: a task
 * may also set those fields on any error of its own.
 */
import { parseDuration } from '../duration.ts';

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

/**
 * Put this job back to run again after `delay` ("30s", "5m", or ms) without
 * using an attempt: the task is waiting for something, not failing. The job's
 * history records the snooze; past `jobs.maxSnoozes` snoozes it is dead-lettered.
 * `ctx.snooze(delay)` throws one of these.
 * @throws RangeError naming the value when `delay` is not a duration.
 */
export class SnoozeError extends Error {
  readonly snoozeMs: number;
  constructor(delay: string | number, options?: { cause?: unknown }) {
    const ms = parseDuration(delay);
    super(`snoozed for ${ms} ms`, options);
    this.name = 'SnoozeError';
    this.snoozeMs = ms;
  }
}
