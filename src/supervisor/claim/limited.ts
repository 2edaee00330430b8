/**
 * A queue with cluster-wide limits (globalConcurrency, perKeyConcurrency,
 * rateLimit) claims through claimLimited (queue/claim_limited.ts), and keeps
 * between claims what the next one needs:
 *   - the per-key walk's cursor, so keys are served round robin;
 *   - how to look for jobs without a key: in a window of the first due jobs,
 *     in all of them, or (for a moment after a window full of keyed work)
 *     not at all (keyless_reads.ts);
 *   - the database's clock as the claims measure it (db_clock.ts), which turns
 *     a rate-limited job's start slot into a moment of the local clock; a
 *     rate-limited claim is put off while it is too uncertain to place any
 *     start (clock_gate.ts).
 *   - how many keys the last per-key walk visited for the jobs it took, so
 *     the next walk visits about as many as it needs (keysToVisit);
 *   - the runs whose slots it has lent (transfers.ts): this supervisor's runs
 *     that have ended, outcomes not yet written (`ended`, the completer's),
 *     go to every claim until their outcomes are written, but for a queue
 *     limited per key alone, which stops passing a run once a claim spent it.
 * When the limits, not the pending jobs, cut a claim short it asks to be tried
 * again when a start frees up (rate limit) or after LIMITED_RETRY_MS, since a
 * slot freed by another supervisor is not announced.
 */
import type { QueueSettings } from '../../config/sections.ts';
import { nextDueIn } from '../../queue/claim.ts';
import { claimLimited, rateWindowMs } from '../../queue/claim_limited.ts';
import type { ClaimedJob } from '../../queue/types.ts';
import { readClaimedSteps } from './claimed_steps.ts';
import { ClockGate } from './clock_gate.ts';
import { DbClock } from './db_clock.ts';
import { KeylessReads } from './keyless_reads.ts';
import type { ClaimContext } from './plain.ts';
import type { ClaimResult, ClaimStrategy } from './strategy.ts';
import { spentSlots } from './transfers.ts';

/** How soon a limited queue held back by its cluster limits claims again. */
export const LIMITED_RETRY_MS = 200;

/**
 * How many keys a per-key claim of `limit` places should visit, from what the
 * last one took (`claimed` jobs from `visited` keys): enough for its yield,
 * with a quarter to spare, and at most 4 × limit + 100 (5,000 at most), the
 * most any claim visits. Each visited key costs index probes whether it takes
 * a job or not: with 10,000 keys a claim of 50 visited 300 and read 2,200
 * pages, where 80 keys have room for the 50.
 */
export function keysToVisit(limit: number, last: { visited: number; claimed: number } | null): number {
  const most = Math.min(5000, 4 * limit + 100);
  if (last === null || last.visited === 0) return most;
  const perKey = Math.max(last.claimed / last.visited, 0.05);
  return Math.min(most, Math.ceil((limit / perKey) * 1.25) + 16);
}

export class LimitedClaim implements ClaimStrategy {
  readonly splitsPlacesFirst = false;
  /** Where the next per-key walk starts. */
  private cursor: string | null = null;
  /** How the next claims look for jobs without a key. */
  private readonly keyless = new KeylessReads();
  /** What the last per-key walk visited and took. */
  private lastWalk: { visited: number; claimed: number } | null = null;
  /** Tokens of ended runs whose slots a claim has spent (per-key limits alone: transfers.ts). */
  private readonly spent = new Set<string>();
  private readonly lendsSlots: boolean;
  /** keyWeights as the claim takes them: named keys, their weights, every other key's. */
  private readonly weights: { keys: string[]; weights: number[]; other: number };
  /** Rate limits: whether the clock is good enough to place starts. */
  private readonly clockGate: ClockGate;

  constructor(
    private readonly context: ClaimContext,
    private readonly limits: Pick<
      QueueSettings,
      'globalConcurrency' | 'perKeyConcurrency' | 'rateLimit' | 'keyWeights'
    >,
    /** The database's clock, as the claims measure it. */
    private readonly dbClock: DbClock,
    /** The local clock (ms since the epoch; default Date.now). */
    private readonly clock?: () => number,
    /** This supervisor's runs of the queue that have ended, outcomes not yet written. */
    private readonly ended: () => readonly ClaimedJob[] = () => [],
  ) {
    this.clockGate = new ClockGate(dbClock, clock ?? Date.now);
    this.lendsSlots = limits.globalConcurrency !== undefined || limits.perKeyConcurrency !== undefined;
    const named = Object.entries(limits.keyWeights ?? {}).filter(([key]) => key !== '*');
    this.weights = {
      keys: named.map(([key]) => key),
      weights: named.map(([, w]) => w),
      other: limits.keyWeights?.['*'] ?? 1,
    };
  }

  async claim(limit: number): Promise<ClaimResult> {
    const c = this.context;
    const rate = this.limits.rateLimit;
    const clockWait = rate ? await this.clockGate.wait(c.store.db, rate.periodMs) : null;
    if (clockWait !== null) return { jobs: [], retryInMs: clockWait };
    const started = performance.now();
    const keylessScan = this.keyless.scan(started);
    const maxKeys = keysToVisit(limit, this.lastWalk);
    const claim = await claimLimited(c.store, {
      owner: c.owner,
      queue: c.queue,
      limit,
      leaseMs: c.leaseMs,
      maxPayloadBytes: c.maxPayloadBytes,
      limits: this.limits,
      cursor: this.cursor,
      keylessScan,
      maxKeys,
      ended: this.lendable(),
      weights: this.weights,
      durable: c.durable(),
      clock: this.clock,
    });
    if (claim.clock) this.dbClock.observe(claim.clock);
    this.cursor = claim.cursor;
    if (claim.keysVisited > 0) this.lastWalk = { visited: claim.keysVisited, claimed: claim.jobs.length };
    const spent = spentSlots({
      globalConcurrency: this.limits.globalConcurrency !== undefined,
      perKeyConcurrency: this.limits.perKeyConcurrency !== undefined,
      found: claim.ended,
      claimedKeys: claim.keys,
    });
    for (const token of spent) this.spent.add(token);
    this.keyless.observe(
      keylessScan,
      { keylessHidden: claim.keylessHidden, took: claim.jobs.length, tookKeyless: claim.keys.includes(null) },
      started,
      performance.now(),
    );
    // Cut short by a cluster limit, or keys at their limit: not "nothing due", so
    // no due-time timer (it would fire at once and spin); claim again later.
    const held = (!claim.full && claim.jobs.length >= claim.budget) || claim.keysWaiting;
    const nextFree = claim.nextFreeMs !== null && claim.nextFreeMs > 0 ? claim.nextFreeMs : LIMITED_RETRY_MS;
    await readClaimedSteps(c.store, claim.jobs);
    return {
      jobs: claim.jobs,
      retryInMs: held ? nextFree : null,
      // Short with every key that has a pending job visited (the walk came round before maxKeys).
      ...(this.limits.perKeyConcurrency !== undefined &&
        rate === undefined &&
        claim.keysWaiting &&
        claim.keysVisited < maxKeys && { keysBound: claim.keysVisited }),
      ...(rate && claim.startAtMs.length > 0 && { slots: this.localSlots(claim.startAtMs, rate.periodMs) }),
    };
  }

  /** Start slots by the local clock, with the error they may have by the last of them (ClaimResult.slots). */
  private localSlots(startAtMs: number[], periodMs: number): NonNullable<ClaimResult['slots']> {
    const atMs = startAtMs.map((ms) => this.dbClock.toLocal(ms));
    const errorMs = this.dbClock.errorAt(Math.max(...atMs) + rateWindowMs(periodMs) - periodMs);
    return { atMs, periodMs, errorMs };
  }

  /** The ended runs not yet known spent; spent ones whose outcome is written are forgotten. */
  private lendable(): Array<{ id: string; token: string }> {
    if (!this.lendsSlots) return [];
    const ended = this.ended();
    if (this.spent.size > 0) {
      const live = new Set(ended.map((j) => j.token));
      for (const token of this.spent) if (!live.has(token)) this.spent.delete(token);
    }
    return ended.filter((j) => !this.spent.has(j.token)).map((j) => ({ id: j.id, token: j.token }));
  }

  nextDueIn(): Promise<number | null> {
    return nextDueIn(this.context.store, this.context.queue);
  }
}
