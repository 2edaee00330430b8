/**
 * Errors that escape a task: a promise rejected with no handler (a forgotten
 * `await`) and an exception thrown from a timer or event callback. Node's
 * default ends the whole thread, which fails every job on it; here the error is
 * charged to the job whose code raised it, and only to that job.
 *
 * Attribution: each job runs inside `currentJob.run(job, …)`, so Node hands the
 * handler the job's context (AsyncLocalStorage follows timers and promises).
 * Without a context (code outside any job), the session's only job in flight
 * is the culprit when there is exactly one. Otherwise:
 *   - an unhandled rejection is logged with the ids in flight and charged to
 *     no one (the thread keeps running; its state is not corrupted by a
 *     rejection nobody awaited);
 *   - an uncaught exception is rethrown as before: it may come from the
 *     thread's own machinery, and a thread in an unknown state must not go on
 *     running jobs. The supervisor then fails the thread's jobs.
 * An error from a job that has already settled is logged and charged to no one.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from 'pino';
import { toTaskError } from './convert.ts';
import type { TaskError } from './protocol.ts';

export interface EscapableJob {
  readonly id: string;
  /** Fails the job with `error` unless it has settled; true when it was failed now. */
  fail(error: TaskError): boolean;
}

export type Escape = 'UnhandledRejection' | 'UncaughtException';

/** The job whose code is running (see the file comment). */
export const currentJob = new AsyncLocalStorage<EscapableJob>();

/** The escape as the job's error: its own name and message, prefixed with what happened. */
export function escapeError(kind: Escape, err: unknown): TaskError {
  const e = toTaskError(err);
  const what =
    kind === 'UnhandledRejection'
      ? 'a promise rejected with no handler (a missing await or .catch?)'
      : 'an exception was thrown outside the task’s promise (from a timer or callback)';
  return { ...e, name: kind, message: `${what}: ${e.name}: ${e.message}` };
}

/**
 * Which job an escape belongs to: the job in whose context it was raised, else
 * the only job in flight, else none.
 */
export function culprit(
  context: EscapableJob | undefined,
  inFlight: readonly EscapableJob[],
): EscapableJob | undefined {
  if (context) return context;
  return inFlight.length === 1 ? inFlight[0] : undefined;
}

/** Installs the thread's handlers once; `inFlight` lists the jobs of the current session. */
export function catchEscapes(log: Logger, inFlight: () => readonly EscapableJob[]): void {
  const handle = (kind: Escape, err: unknown): boolean => {
    const jobs = inFlight();
    const job = culprit(currentJob.getStore(), jobs);
    const error = escapeError(kind, err);
    if (job?.fail(error)) {
      log.warn({ jobId: job.id, escape: kind, error: error.message }, 'task error escaped its job: job failed');
      return true;
    }
    log.error(
      { jobId: job?.id, escape: kind, error: error.message, inFlight: jobs.map((j) => j.id) },
      job ? 'task error escaped a job that had already finished' : 'task error escaped and no job could be blamed',
    );
    return job !== undefined;
  };
  process.on('unhandledRejection', (reason) => void handle('UnhandledRejection', reason));
  const onException = (err: unknown) => {
    if (handle('UncaughtException', err)) return;
    // Unknown origin: end the thread as Node would have (see the file comment).
    process.off('uncaughtException', onException);
    setImmediate(() => {
      throw err;
    });
  };
  process.on('uncaughtException', onException);
}
