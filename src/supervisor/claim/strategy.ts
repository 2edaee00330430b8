/**
 * How a fetcher claims: the one thing that differs between a plain queue and a
 * queue with cluster-wide limits. The fetcher (fetcher.ts) decides when to
 * claim and how many places to fill, and what to do with what comes back; a
 * strategy only claims (plain.ts, limited.ts) and says whether to try again.
 */
import type { ClaimedJob } from '../../queue/types.ts';

/** What one claim brought back, in the fetcher's terms. */
export interface ClaimResult {
  jobs: ClaimedJob[];
  /**
   * Rate limits: each job's start slot (same order) by the local clock, ms
   * since the epoch, the limit's period, and how far the slots may be off
   * (DbClock.errorMs, aged until the last start). Absent: the jobs start at once.
   */
  slots?: { atMs: number[]; periodMs: number; errorMs: number };
  /**
   * Cut short by a limit rather than by a lack of due jobs: claim again in
   * this many ms (a slot freed elsewhere is not announced). Null: not held
   * back, so fewer jobs than asked means none are due.
   */
  retryInMs: number | null;
  /**
   * A queue limited per key (perKeyConcurrency, no rate limit) whose claim was
   * cut short by keys at their limit, having visited every key with a pending
   * job: how many keys that is (key_turnover.ts says what the fetcher does with it).
   */
  keysBound?: number;
}

/** Claims up to `limit` due jobs of one queue for this supervisor. */
export interface ClaimStrategy {
  /**
   * @throws the database's error (the fetcher reports it and claims again later); nothing is claimed.
   */
  claim(limit: number): Promise<ClaimResult>;
  /** Ms until the queue's next pending job comes due (null: none pending), after a claim found none due. */
  nextDueIn(): Promise<number | null>;
  /**
   * Whether a claim for the places alone, then one for the prefetch, may
   * replace one claim for both (see fetcher.ts). Only a claim that costs a
   * round trip per statement gains: a limited claim counts slots each time.
   */
  readonly splitsPlacesFirst: boolean;
}
