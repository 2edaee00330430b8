/**
 * A writer: the outcomes of one meaning (done, failed, released, snoozed), how
 * they wait for their write as parallel arrays (at tens of thousands of jobs
 * per second an object per outcome is measurable garbage-collector time), and
 * how rows [lo, hi) of them are written in one fenced statement and reported.
 * The completer dispatches each recorded outcome to its writer (completer.ts),
 * and batches and splits every writer's rows the same way (outcome_batch.ts).
 */
import type { ClaimedJob, JobRef } from '../../queue/types.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Recorded } from './outcome.ts';
import type { OutcomeStore } from './store.ts';

/** The rows every writer has, aligned: the claimed job and its run time. */
export interface Rows {
  readonly jobs: ClaimedJob[];
  readonly runMs: number[];
}

export interface WriteContext {
  store: OutcomeStore;
  events: SupervisorEvents;
  /**
   * The row's outcome is written or fenced off: the completer no longer holds
   * its claim (the heartbeat stops renewing it). Called before its event.
   */
  settled(job: ClaimedJob): void;
  /**
   * Rows the database refused through the fence (this supervisor no longer
   * held the claim): their runs have ended, so a cancelled one gives its slot
   * back (the lostRunsEnded hook), and observers get 'job:fenced'.
   */
  fenced(jobs: JobRef[]): void;
}

export interface OutcomeWriter<R extends Rows, O extends Recorded> {
  /** Empty rows. */
  rows(): R;
  add(rows: R, job: ClaimedJob, outcome: O): void;
  /** Copies row i of `from` to the end of `to` (its write is tried again). */
  copy(to: R, from: R, i: number): void;
  /**
   * Writes rows [lo, hi) in one statement, then emits their events (never
   * before the write, through safeEmit). Throws what the statement throws.
   */
  write(c: WriteContext, rows: R, lo: number, hi: number): Promise<void>;
  /** What was being written for row i, as the dead-letter fallback's last_error names it. */
  describe(rows: R, i: number): string;
}

/** The outcome of one type. */
export type OutcomeOf<T extends Recorded['type']> = Extract<Recorded, { type: T }>;
