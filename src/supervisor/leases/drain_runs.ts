/**
 * The shutdown rule for runs (DESIGN, rule 4): jobs claimed and not started
 * are handed back at once; running ones get the grace period to finish; the
 * rest are then aborted and handed back without using an attempt, with
 * `abortGraceMs` (plus a second for their threads to let go) to settle.
 */
import { within } from '../../within.ts';
import type { Dispatcher } from '../dispatch/dispatcher.ts';

export async function drainRuns(dispatcher: Dispatcher, graceMs: number, abortGraceMs: number): Promise<void> {
  dispatcher.drainBuffers();
  if (!(await within(dispatcher.whenIdle(), graceMs))) {
    dispatcher.abortAll();
    await within(dispatcher.whenIdle(), abortGraceMs + 1000);
  }
}
