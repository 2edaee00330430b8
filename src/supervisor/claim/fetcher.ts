/**
 * The fetcher of one queue: claims due jobs into the dispatcher, up to the
 * queue's free capacity, one claim at a time. How it claims is its strategy's
 * business (claim/strategy.ts: claim/plain.ts, claim/limited.ts); this loop
 * decides when, for how many places, and where the jobs go.
 *
 * It claims when woken (a notification, the poll timer, a delayed job coming
 * due) and, while the last claim came back full (a backlog), whenever enough
 * capacity has freed up to make a batch worth a round trip. A wake during a
 * claim is remembered and answered right after it. A fetcher that holds
 * nothing claims for its places first and for its prefetch right after (when
 * its strategy allows it): a burst after a quiet spell then starts its first
 * jobs after a claim of `concurrency` rows, not of MAX_CLAIM (20,000-job
 * bursts on 2 cores, tuned shape: first start 3 ms instead of 25, jobs/s
 * unchanged).
 *
 * A claim cut short by a limit (the strategy's retryInMs) is tried again
 * then, at the latest at the next poll, and counts as a backlog; an empty
 * claim that was not held back arms a timer for the next delayed job, if it
 * comes due before the next poll.
 *
 * A paused fetcher claims nothing; jobs of a claim that was under way when the
 * pause arrived are handed back, not started. A rate-limited claim names the
 * moment each job is to start (by the local clock, as its strategy converted
 * it): the jobs are held here until then, beside the queue's places (how many
 * may wait: holdsShift()), and handed back if the queue is paused or the
 * fetcher stops (start_holds.ts). Held jobs are claimed: the heartbeat renews
 * their leases (fences()) and a lost one is dropped (leaseLost()).
 */
import type { ClaimedJob, Fence } from '../../queue/types.ts';
import type { FetcherOptions } from './fetcher_options.ts';
import { NO_HOOKS, reportDbError } from '../hooks.ts';
import { isLimited } from '../../config/sections.ts';
import { ClaimAhead } from './ahead.ts';
import { KeyTurnover } from './key_turnover.ts';
import { leadlessQueue, StartHolds } from './start_holds.ts';

export type { FetcherOptions } from './fetcher_options.ts';

export const MAX_CLAIM = 1000;
/** A rate-limited queue holds at most this many × `concurrency` jobs for their slots beyond `concurrency`. */
export const HOLDS_AHEAD_MOST = 3;

export class Fetcher {
  private claiming: Promise<number> | undefined;
  private dirty = false;
  private backlog = false;
  private stopped = false;
  private dueTimer: NodeJS.Timeout | undefined;
  private readonly minBatch: number;
  /** A queue limited per key claims ahead by time, not its whole prefetch (ahead.ts); null: others. */
  private readonly ahead: ClaimAhead | null;
  /** A rate-limited queue holds jobs for their slots by the same measure (ahead.ts); null: others. */
  private readonly holdsAhead: ClaimAhead | null;
  private paused = false;
  /**
   * When the next pending job is due (local clock, ms), as last read; null: none
   * pending. 0 at first: unknown, read after the first claim.
   */
  private nextDueAt: number | null = 0;
  /** Rate-limited jobs claimed and held until their start slot. */
  private readonly holds: StartHolds;
  /** A queue limited per key: when to claim after a claim its keys cut short (key_turnover.ts); null: others. */
  private readonly turnover: KeyTurnover | null;
  /** Capacity freed while a claim of a per-key queue was under way: looked at (onCapacity) when it returns. */
  private freedWhileClaiming = false;

  constructor(private readonly options: FetcherOptions) {
    const { concurrency, prefetch } = options.settings;
    // Without a hand-back path (tests), held jobs go to the dispatcher at once.
    const handBack = options.handBack ?? ((jobs: ClaimedJob[]) => options.deliver(jobs));
    this.holds = new StartHolds({
      now: options.clock ?? Date.now,
      leaseMs: options.leaseMs,
      deliver: (jobs) => {
        this.holdsAhead?.record(jobs.length);
        options.deliver(jobs);
      },
      handBack,
      paused: () => this.paused,
      leadless: leadlessQueue(options.settings.rateLimit, concurrency),
    });
    const clock = options.clock ?? Date.now;
    this.ahead = isLimited(options.settings) && prefetch > 0 ? new ClaimAhead(prefetch, clock) : null;
    this.holdsAhead = options.settings.rateLimit ? new ClaimAhead(HOLDS_AHEAD_MOST * concurrency, clock) : null;
    const perKey = options.settings.perKeyConcurrency !== undefined && !options.settings.rateLimit;
    this.turnover = perKey ? new KeyTurnover(options.settings, () => this.onCapacity()) : null;
    this.minBatch = Math.max(1, Math.floor((concurrency + (this.ahead ? 0 : prefetch)) / 4));
  }

  /** Room for a claim: the queue's free capacity, or for a per-key queue what ahead.ts allows of it. */
  private room(capacity = this.options.capacity()): number {
    return this.ahead ? this.ahead.room(capacity) : capacity;
  }

  /**
   * What a rate-limited queue's holds change in the room for a claim (0 for other queues).
   * Jobs held for their start slot wait beside the running ones, up to `concurrency` of
   * them plus what the queue started in the last AHEAD_HORIZON_MS (holdsAhead, ahead.ts):
   * beyond that, the excess comes off the room (counted as running instead, a 10 ms hold
   * idled every place for 10 ms per claim). Below that second part, the queue claims that
   * much beyond its free places: each job starts at least RATE_START_DELAY_MS after its
   * claim, so a queue that claimed for its free places only took about 35 of its 50 per
   * claim, one claim after another, and ran at 9,800 no-op jobs/s where the unlimited
   * queue ran 15,800 (rateLimit 100,000/s, 20,000 jobs); with the holds kept full, claims
   * of about 60 and 12,000 jobs/s.
   */
  private holdsShift(): number {
    if (this.holdsAhead === null) return 0;
    const extra = this.holdsAhead.extra();
    const allowed = this.options.settings.concurrency + extra;
    if (this.holds.size > allowed) return allowed - this.holds.size;
    return Math.max(0, extra - this.holds.size);
  }

  /** Paused: claim nothing until resumed. Resuming claims at once. */
  setPaused(paused: boolean): void {
    if (this.paused === paused) return;
    this.paused = paused;
    if (paused) {
      clearTimeout(this.dueTimer);
      this.turnover?.clear();
      this.holds.handBackAll('queue paused');
    } else this.wake();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Something may be due: claim as soon as possible. */
  wake(): void {
    if (this.stopped || this.paused) return;
    if (this.claiming) {
      this.dirty = true;
      return;
    }
    this.claiming = this.claim().finally(() => {
      this.claiming = undefined;
      if (this.dirty && !this.stopped) {
        this.dirty = false;
        this.wake();
      } else if (this.freedWhileClaiming) {
        this.freedWhileClaiming = false;
        this.onCapacity();
      }
    });
  }

  /**
   * Capacity freed up: claim again only if there is a backlog and room for a batch. A
   * rate-limited queue counts its holds in that room: holding more than may wait, it
   * claimed a job or two for each place that freed, one claim after another (7,000
   * claims for 20,000 jobs at 2,000/s; 2,461 counting them).
   */
  onCapacity(): void {
    if (this.turnover) {
      // Not a wake during the claim (which would claim again the moment it returns): the
      // claim's answer decides whether the next one waits for its jobs (key_turnover.ts).
      if (this.claiming) {
        this.freedWhileClaiming = true;
        return;
      }
      if (!this.turnover.ready(this.options.capacity(), this.now())) return;
    }
    if (this.backlog && this.room() + this.holdsShift() >= this.minBatch) this.wake();
  }

  /** Claims once and returns how many jobs it got (tests drive the fetcher with this). */
  async runOnce(): Promise<number> {
    await this.claiming;
    this.wake();
    return (await this.claiming) ?? 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.dueTimer);
    this.turnover?.clear();
    await this.claiming;
    this.holds.handBackAll('fetcher stopped before the start slot');
  }

  /** The claims of the jobs held for their start slot (the heartbeat renews their leases). */
  fences(): Fence[] {
    return this.holds.fences();
  }

  /** Held jobs whose claims were lost (reaped, cancelled) are dropped: nothing of them may start. */
  leaseLost(tokens: string[]): void {
    this.holds.leaseLost(tokens);
  }

  private async claim(): Promise<number> {
    const { strategy, settings } = this.options;
    try {
      await this.options.beforeClaim?.();
    } catch (err) {
      this.failed(err);
      this.backlog = false;
      return 0;
    }
    if (this.paused || this.stopped) return 0;
    // A rate-limited queue's holds widen or narrow the room (holdsShift()).
    const capacity = this.options.capacity();
    const { concurrency, prefetch } = settings;
    let limit = Math.min(MAX_CLAIM, this.room(capacity) + this.holdsShift());
    // Holding nothing, as when a burst follows a quiet spell: the first claim is for the
    // places only, so the first jobs start after a claim of `concurrency` rows instead of
    // MAX_CLAIM, and the jobs claimed ahead follow in the next claim, at once.
    const placesFirst =
      strategy.splitsPlacesFirst && prefetch > 0 && capacity === concurrency + prefetch && limit > concurrency;
    if (placesFirst) limit = concurrency;
    if (limit <= 0) return 0;
    let claimed;
    const claimStarted = this.now();
    try {
      claimed = await strategy.claim(limit);
    } catch (err) {
      this.failed(err);
      this.backlog = false;
      return 0;
    }
    const { jobs, retryInMs } = claimed;
    this.turnover?.clear();
    this.ahead?.claimed(jobs.length);
    const held = retryInMs !== null;
    if (held) this.retryIn(retryInMs);
    if (this.paused && jobs.length > 0) {
      // Paused while this claim was under way: nothing of it may start.
      if (this.options.handBack) {
        this.options.handBack(jobs, 'queue paused');
        return 0;
      }
    }
    this.backlog = jobs.length === limit || held;
    if (placesFirst && this.backlog) this.dirty = true;
    if (jobs.length > 0) {
      (this.options.hooks ?? NO_HOOKS).claimed(this.options.queue);
      this.options.events.emit('job:claimed', { queue: this.options.queue, count: jobs.length });
      if (claimed.slots) this.holds.add(jobs, claimed.slots);
      else this.options.deliver(jobs);
      // Few keys, all visited, and still short: the next claim waits for these jobs (key_turnover.ts).
      if (claimed.keysBound !== undefined) {
        const capacity = this.options.capacity();
        this.turnover?.cutShort(claimed.keysBound, jobs.length, capacity, this.now() - claimStarted, this.now());
      }
      // A claim that took every due job, with a delayed one (a sleeper, a backoff) known
      // to come due before the next poll: nothing else wakes the fetcher then, so the
      // poll did (sleepers due one after another woke up to poll.interval late). A queue
      // with no delayed job in sight pays no read here.
      if (!this.backlog && this.dueSoon()) await this.armDueTimer();
    } else if (!held) {
      await this.armDueTimer();
    }
    return jobs.length;
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  /** The next known due time, unknown or before the next poll. */
  private dueSoon(): boolean {
    return this.nextDueAt !== null && this.nextDueAt - this.now() < this.options.pollIntervalMs;
  }

  /** A claim (or what it waited for) failed on the database. */
  private failed(err: unknown): void {
    reportDbError(this.options.hooks ?? NO_HOOKS, this.options.events, `fetcher:${this.options.queue}`, err);
  }

  /** Held back by a cluster limit: claim again after `ms` (at the latest at the next poll). */
  private retryIn(ms: number): void {
    clearTimeout(this.dueTimer);
    if (this.stopped || this.paused) return;
    this.dueTimer = setTimeout(() => this.wake(), Math.max(1, Math.min(Math.ceil(ms), this.options.pollIntervalMs)));
    this.dueTimer.unref();
  }

  /**
   * No due job left unclaimed: if a delayed job comes due before the next poll,
   * wake then. One timer per fetcher, for the earliest due time, whatever the
   * number of delayed jobs.
   */
  private async armDueTimer(): Promise<void> {
    let inMs: number | null;
    try {
      inMs = await this.options.strategy.nextDueIn();
    } catch {
      return;
    }
    this.nextDueAt = inMs === null ? null : this.now() + inMs;
    clearTimeout(this.dueTimer);
    if (inMs === null || inMs >= this.options.pollIntervalMs || this.stopped) return;
    this.dueTimer = setTimeout(() => this.wake(), Math.max(1, Math.ceil(inMs)));
    this.dueTimer.unref();
  }
}
