/**
 * The fetcher of one queue: claims due jobs into the dispatcher, up to the
 * queue's free capacity, one claim statement at a time.
 *
 * It claims when woken (a notification, the poll timer, a delayed job coming
 * due) and, while the last claim came back full (a backlog), whenever enough
 * capacity has freed up to make a batch worth a round trip. A wake during a
 * claim is remembered and answered right after it. A fetcher that holds
 * nothing claims for its places first and for its prefetch right after: a
 * burst after a quiet spell then starts its first jobs after a claim of
 * `concurrency` rows, not of MAX_CLAIM (20,000-job bursts on 2 cores, tuned
 * shape: first start 3 ms instead of 25, jobs/s unchanged).
 *
 * A paused fetcher claims nothing; jobs of a claim that was under way when the
 * pause arrived are handed back, not started. A limited queue (cluster-wide
 * limits) claims through claimLimited; when the limits, not the pending jobs,
 * cut a claim short, it tries again when a start frees up (rate limit) or
 * after LIMITED_RETRY_MS, since a slot freed by another supervisor is not announced.
 * A rate-limited claim names the moment its jobs are to start, by the
 * database's clock (see claim_limited.ts): they are held here until then, by
 * the local clock corrected with the offset each claim measures (db_clock.ts),
 * counted against the queue's places, and handed back if the queue is paused or
 * the fetcher stops (start_holds.ts). Held jobs are claimed: the heartbeat
 * renews their leases (fences()) and a lost one is dropped (leaseLost()).
 * A per-key claim looks for jobs without a key in a window of the queue's
 * first due jobs; when the last one said more may lie beyond it, the next
 * claim reads to the end, spaced by costlyReadGap (src/cached.ts) from the
 * last such claim, and at least KEYLESS_FULL_MIN_MS apart.
 */
import { costlyReadGap } from '../cached.ts';
import { isLimited } from '../config/sections.ts';
import { claimJobs, nextDueIn } from '../queue/claim.ts';
import { claimLimited } from '../queue/claim_limited.ts';
import type { ClaimedJob, Fence } from '../queue/types.ts';
import { DbClock } from './db_clock.ts';
import type { FetcherOptions } from './fetcher_options.ts';
import { NO_HOOKS, reportDbError } from './hooks.ts';
import { StartHolds } from './start_holds.ts';

export type { FetcherOptions } from './fetcher_options.ts';

export const MAX_CLAIM = 1000;
/** The least time between two claims that read every due job for keyless ones (see costlyReadGap). */
export const KEYLESS_FULL_MIN_MS = 1000;
/** How soon a limited queue held back by its cluster limits claims again. */
export const LIMITED_RETRY_MS = 200;

export class Fetcher {
  private claiming: Promise<number> | undefined;
  private dirty = false;
  private backlog = false;
  private stopped = false;
  private dueTimer: NodeJS.Timeout | undefined;
  private readonly minBatch: number;
  private readonly limited: boolean;
  private paused = false;
  /** Where the next per-key walk starts. */
  private cursor: string | null = null;
  /** Jobs without a key may lie beyond the last claim's window; when a full read may run next. */
  private keylessHidden = false;
  private keylessFullAt = 0;
  /**
   * When the next pending job is due (local clock, ms), as last read; null: none
   * pending. 0 at first: unknown, read after the first claim.
   */
  private nextDueAt: number | null = 0;
  /** The database's clock, as the claims measure it. */
  private readonly dbClock: DbClock;
  /** Rate-limited jobs claimed and held until their start slot. */
  private readonly holds: StartHolds;

  constructor(private readonly options: FetcherOptions) {
    const { concurrency, prefetch } = options.settings;
    this.dbClock = new DbClock(options.clock);
    // Without a hand-back path (tests), held jobs go to the dispatcher at once.
    const handBack = options.handBack ?? ((jobs: ClaimedJob[]) => options.deliver(jobs));
    this.holds = new StartHolds({
      clock: this.dbClock,
      leaseMs: options.leaseMs,
      deliver: (jobs) => options.deliver(jobs),
      handBack,
      paused: () => this.paused,
    });
    this.limited = isLimited(options.settings);
    this.minBatch = Math.max(1, Math.floor((concurrency + prefetch) / 4));
  }

  /** Paused: claim nothing until resumed. Resuming claims at once. */
  setPaused(paused: boolean): void {
    if (this.paused === paused) return;
    this.paused = paused;
    if (paused) {
      clearTimeout(this.dueTimer);
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
      }
    });
  }

  /** Capacity freed up: claim again only if there is a backlog and room for a batch. */
  onCapacity(): void {
    if (this.backlog && this.options.capacity() >= this.minBatch) this.wake();
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

  /** Delivers the claimed jobs, or holds them until their rate-limit start slots. */
  private deliverAt(jobs: ClaimedJob[], startAtMs: number[]): void {
    const rate = this.options.settings.rateLimit;
    if (startAtMs.length === 0 || !rate) this.options.deliver(jobs);
    else this.holds.add(jobs, startAtMs, rate.periodMs);
  }

  private async claim(): Promise<number> {
    try {
      await this.options.beforeClaim?.();
    } catch (err) {
      this.failed(err);
      this.backlog = false;
      return 0;
    }
    if (this.paused || this.stopped) return 0;
    // Jobs held for their start slot wait beside the running ones, up to `concurrency`
    // of them: counted as running, a 10 ms hold idled every place for 10 ms per claim.
    const heldOver = Math.max(0, this.holds.size - this.options.settings.concurrency);
    const capacity = this.options.capacity();
    const { concurrency, prefetch } = this.options.settings;
    let limit = Math.min(MAX_CLAIM, capacity - heldOver);
    // Holding nothing, as when a burst follows a quiet spell: the first claim is for the
    // places only, so the first jobs start after a claim of `concurrency` rows instead of
    // MAX_CLAIM, and the jobs claimed ahead follow in the next claim, at once.
    const placesFirst = !this.limited && prefetch > 0 && capacity === concurrency + prefetch && limit > concurrency;
    if (placesFirst) limit = concurrency;
    if (limit <= 0) return 0;
    let jobs: ClaimedJob[];
    let held = false;
    let startAtMs: number[] = [];
    try {
      if (this.limited) {
        const started = performance.now();
        const keylessScan = this.keylessHidden && started >= this.keylessFullAt ? 'all' : 'window';
        const claim = await claimLimited(this.options.store, {
          owner: this.options.owner,
          queue: this.options.queue,
          limit,
          leaseMs: this.options.leaseMs,
          maxPayloadBytes: this.options.maxPayloadBytes,
          limits: this.options.settings,
          cursor: this.cursor,
          keylessScan,
          durable: this.options.durableClaims?.() === true,
          clock: this.options.clock,
        });
        if (claim.clock) this.dbClock.observe(claim.clock);
        jobs = claim.jobs;
        this.cursor = claim.cursor;
        if (keylessScan === 'all') {
          const ended = performance.now();
          this.keylessFullAt = ended + costlyReadGap(ended - started, KEYLESS_FULL_MIN_MS);
        }
        this.keylessHidden = claim.keylessHidden;
        startAtMs = claim.startAtMs;
        // Cut short by a cluster limit, or keys at their limit: not "nothing due", so
        // no due-time timer (it would fire at once and spin); claim again later.
        held = (!claim.full && jobs.length >= claim.budget) || claim.keysWaiting;
        const nextFree = claim.nextFreeMs !== null && claim.nextFreeMs > 0 ? claim.nextFreeMs : LIMITED_RETRY_MS;
        if (held) this.retryIn(nextFree);
      } else {
        jobs = await claimJobs(this.options.store, {
          owner: this.options.owner,
          queue: this.options.queue,
          limit,
          leaseMs: this.options.leaseMs,
          maxPayloadBytes: this.options.maxPayloadBytes,
          durable: this.options.durableClaims?.() === true,
        });
      }
    } catch (err) {
      this.failed(err);
      this.backlog = false;
      return 0;
    }
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
      this.deliverAt(jobs, startAtMs);
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
      inMs = await nextDueIn(this.options.store, this.options.queue);
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
