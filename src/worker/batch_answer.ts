/**
 * What a batch call's answer means for each of its jobs: a pure decision.
 *
 *   undefined                 → every job done, no result;
 *   an array of one entry per job, in order:
 *     an Error                → that job's attempt failed (its permanent,
 *                               retryInMs and snoozeMs fields are read as a
 *                               thrown error's are: worker/convert.ts);
 *     anything else           → that job is done, the value stored as its
 *                               result (undefined: none); a value that cannot
 *                               be stored fails that job alone (report.ts);
 *   anything else (a wrong length, a non-array) → every job fails with
 *     BatchAnswerMismatch, retried as usual: the task is wrong, not the jobs.
 * A plain object is a value even with `permanent: true`: only an Error is a failure.
 */
import { isNativeError } from 'node:util/types';
import { describe, toTaskError } from './convert.ts';
import type { TaskError } from './protocol.ts';
import { encodeResult } from './report.ts';

export interface JobAnswer {
  error: TaskError | null;
  /** The value's JSON text (undefined: nothing to store). */
  result?: string;
}

/** Each job's outcome (n of them) from the call's return value. Never throws. */
export function readAnswer(value: unknown, n: number, maxResultBytes: number): JobAnswer[] {
  if (value === undefined) return Array.from({ length: n }, () => ({ error: null }));
  if (!Array.isArray(value) || value.length !== n) {
    const error: TaskError = {
      name: 'BatchAnswerMismatch',
      message:
        `the batch task returned ${Array.isArray(value) ? `an array of ${value.length}` : describe(value).slice(0, 200)} ` +
        `for ${n} jobs: return nothing, or an array with one entry per job, in the order of the jobs`,
      permanent: false,
      retryInMs: null,
    };
    return Array.from({ length: n }, () => ({ error }));
  }
  return value.map((entry: unknown) => {
    if (isFailure(entry)) return { error: toTaskError(entry) };
    try {
      const result = encodeResult(entry, maxResultBytes);
      return result === undefined ? { error: null } : { error: null, result };
    } catch (err) {
      return { error: toTaskError(err) };
    }
  });
}

function isFailure(entry: unknown): boolean {
  try {
    return entry instanceof Error || isNativeError(entry);
  } catch {
    return false;
  }
}
