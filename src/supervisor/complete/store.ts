/**
 * What the completer's writers write through: the queue/ statements of an
 * outcome, bound to one store and owner (every write is fenced by that owner
 * and the claim's token). Tests put a fake behind it to drive one decision at
 * a time without a database. Return types follow the statements', so a change
 * to what a statement returns reaches every writer through the type checker.
 */
import { completeJobs, failJobs, releaseJobs, type Failures, type Reports } from '../../queue/complete.ts';
import { deadLetterClaimed } from '../../queue/fallback.ts';
import { sleepJobs, type Sleeps } from '../../queue/sleep.ts';
import { snoozeJobs, type Snoozes } from '../../queue/snooze.ts';
import { parkWaits, type Waits } from '../../queue/wait.ts';
import type { Store } from '../../queue/sql.ts';
import { inTransaction } from '../../queue/transaction.ts';
import type { Fence } from '../../queue/types.ts';

export interface OutcomeStore {
  /** Marks jobs done; @returns the ids NOT written (fenced off). */
  complete(ids: string[], tokens: string[], reports?: Reports): ReturnType<typeof completeJobs>;
  /** Records failed attempts; @returns the ids written, each a retry (`pending`) or a dead letter (`failed`). */
  fail(failures: Failures): ReturnType<typeof failJobs>;
  /** Hands claimed jobs back without using their attempt; @returns the ids written. */
  release(jobs: Fence[]): ReturnType<typeof releaseJobs>;
  /** Puts snoozed jobs back, or dead-letters those past jobs.maxSnoozes; @returns the ids written. */
  snooze(snoozes: Snoozes): ReturnType<typeof snoozeJobs>;
  /** Puts sleeping jobs back, due at their wake time; @returns the ids written. */
  sleep(sleeps: Sleeps): ReturnType<typeof sleepJobs>;
  /** Parks waiting jobs (or makes them pending when their signal is there); @returns the ids written. */
  park(waits: Waits): ReturnType<typeof parkWaits>;
  /** Dead-letters one claimed job alone; false when the fence no longer matches. */
  deadLetter(job: Fence, lastError: string): ReturnType<typeof deadLetterClaimed>;
  /** Runs `fn` with a store whose writes are one transaction (a batch call's outcomes); absent: no transactions. */
  together?<T>(fn: (store: OutcomeStore) => Promise<T>): Promise<T>;
}

/**
 * The OutcomeStore of a supervisor: queue/ statements on `store`, fenced by `owner`.
 * `keepDone` false (cleanup.retention 0) deletes done jobs as they finish.
 */
export function queueOutcomeStore(store: Store, owner: string, maxSnoozes: number, keepDone = true): OutcomeStore {
  return {
    together: (fn) => inTransaction(store, (tx) => fn(queueOutcomeStore(tx, owner, maxSnoozes, keepDone))),
    complete: (ids, tokens, reports) => completeJobs(store, owner, ids, tokens, null, reports, keepDone),
    fail: (failures) => failJobs(store, owner, failures),
    release: (jobs) => releaseJobs(store, owner, jobs),
    snooze: (snoozes) => snoozeJobs(store, owner, snoozes, maxSnoozes),
    sleep: (sleeps) => sleepJobs(store, owner, sleeps),
    park: (waits) => parkWaits(store, owner, waits),
    deadLetter: (job, lastError) => deadLetterClaimed(store, owner, job, lastError),
  };
}
