/**
 * A queue with cluster-wide limits (globalConcurrency, perKeyConcurrency,
 * rateLimit) claims through claimLimited (queue/claim_limited.ts), and keeps
 * between claims what the next one needs:
 *   - the per-key walk's cursor, so keys are served round robin;
 *   - whether jobs without a key may lie beyond the last claim's window: the
 *     next claim then reads every due job, spaced by costlyReadGap
 *     (src/cached.ts) from the last such claim and at least
 *     KEYLESS_FULL_MIN_MS apart;
 *   - the database's clock as the claims measure it (db_clock.ts), which turns
 *     a rate-limited job's start slot into a moment of the local clock.
 * When the limits, not the pending jobs, cut a claim short it asks to be tried
 * again when a start frees up (rate limit) or after LIMITED_RETRY_MS, since a
 * slot freed by another supervisor is not announced.
 */
import { costlyReadGap } from '../../cached.ts';
import type { QueueSettings } from '../../config/sections.ts';
import { nextDueIn } from '../../queue/claim.ts';
import { claimLimited } from '../../queue/claim_limited.ts';
import { DbClock } from '../db_clock.ts';
import type { ClaimContext } from './plain.ts';
import type { ClaimResult, ClaimStrategy } from './strategy.ts';

/** The least time between two claims that read every due job for keyless ones (see costlyReadGap). */
export const KEYLESS_FULL_MIN_MS = 1000;
/** How soon a limited queue held back by its cluster limits claims again. */
export const LIMITED_RETRY_MS = 200;

export class LimitedClaim implements ClaimStrategy {
  readonly splitsPlacesFirst = false;
  /** Where the next per-key walk starts. */
  private cursor: string | null = null;
  /** Jobs without a key may lie beyond the last claim's window; when a full read may run next. */
  private keylessHidden = false;
  private keylessFullAt = 0;

  constructor(
    private readonly context: ClaimContext,
    private readonly limits: Pick<QueueSettings, 'globalConcurrency' | 'perKeyConcurrency' | 'rateLimit'>,
    /** The database's clock, as the claims measure it. */
    private readonly dbClock: DbClock,
    /** The local clock (ms since the epoch; default Date.now). */
    private readonly clock?: () => number,
  ) {}

  async claim(limit: number): Promise<ClaimResult> {
    const c = this.context;
    const started = performance.now();
    const keylessScan = this.keylessHidden && started >= this.keylessFullAt ? 'all' : 'window';
    const claim = await claimLimited(c.store, {
      owner: c.owner,
      queue: c.queue,
      limit,
      leaseMs: c.leaseMs,
      maxPayloadBytes: c.maxPayloadBytes,
      limits: this.limits,
      cursor: this.cursor,
      keylessScan,
      durable: c.durable(),
      clock: this.clock,
    });
    if (claim.clock) this.dbClock.observe(claim.clock);
    this.cursor = claim.cursor;
    if (keylessScan === 'all') {
      const ended = performance.now();
      this.keylessFullAt = ended + costlyReadGap(ended - started, KEYLESS_FULL_MIN_MS);
    }
    this.keylessHidden = claim.keylessHidden;
    // Cut short by a cluster limit, or keys at their limit: not "nothing due", so
    // no due-time timer (it would fire at once and spin); claim again later.
    const held = (!claim.full && claim.jobs.length >= claim.budget) || claim.keysWaiting;
    const nextFree = claim.nextFreeMs !== null && claim.nextFreeMs > 0 ? claim.nextFreeMs : LIMITED_RETRY_MS;
    const rate = this.limits.rateLimit;
    return {
      jobs: claim.jobs,
      retryInMs: held ? nextFree : null,
      ...(rate &&
        claim.startAtMs.length > 0 && {
          slots: { atMs: claim.startAtMs.map((ms) => this.dbClock.toLocal(ms)), periodMs: rate.periodMs },
        }),
    };
  }

  nextDueIn(): Promise<number | null> {
    return nextDueIn(this.context.store, this.context.queue);
  }
}
