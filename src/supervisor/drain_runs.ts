/**
 * The shutdown rule for runs (DESIGN, rule 4): jobs claimed and not started
 * are handed back at once; running ones get the grace period to finish; the
 * rest are then aborted and handed back without using an attempt, with
 * `abortGraceMs` (plus a second for their threads to let go) to settle.
 */
import type { Dispatcher } from './dispatch/dispatcher.ts';

export async function drainRuns(dispatcher: Dispatcher, graceMs: number, abortGraceMs: number): Promise<void> {
  dispatcher.drainBuffers();
  if (!(await within(dispatcher.whenIdle(), graceMs))) {
    dispatcher.abortAll();
    await within(dispatcher.whenIdle(), abortGraceMs + 1000);
  }
}

/** Whether `promise` settled within `ms`; it is not cancelled when it did not. */
export async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
