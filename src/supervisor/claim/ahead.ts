/**
 * How far a queue limited per key claims ahead of its places (its `prefetch`
 * is the most): what it finishes in AHEAD_HORIZON_MS at the rate it finished
 * jobs over the last RATE_WINDOW_MS.
 *
 * A per-key claim costs the database a walk of the keys (one index step per
 * key) and a count of the held slots, so its cost per job falls with its size:
 * 20,000 no-op jobs over 1,000 keys with `perKeyConcurrency` 1, 50 places, ran
 * at 5,700 jobs/s in claims of 50 (5.6 ms each, 112 µs a job) and at 15,200
 * in claims of about 480 (26 ms, 55 µs a job), with 950 claimed ahead. The
 * places alone cap a claim at 50.
 *
 * A job claimed ahead is `running`: it holds its key's slot while it waits
 * here. Its own key could not start another job meanwhile anyway (the slot is
 * the key's, whoever holds it), but the job could have run on another
 * supervisor's idle thread, and a key arriving late waits behind the jobs
 * claimed before it. So the buffer is sized by time, not by a count: about
 * 100 ms of this supervisor's work. Slow jobs get a few (50 places of 1-s jobs:
 * 5 ahead), no-op bursts hundreds, and a supervisor holding nothing claims for
 * its places alone until it has finished something.
 *
 * The same measure sizes what a rate-limited queue holds for its start slots
 * (fetcher.ts): each claimed job starts at least RATE_START_DELAY_MS after its
 * claim, so to keep its places busy a queue must hold about its finishing rate
 * × that delay, and with holds capped at `concurrency` a generous limit cost
 * 60 % of the queue's speed. Holding more than the places can start in time
 * would only make jobs miss their windows, so the extra follows the rate at
 * which held jobs went to the places (record()), at most 3 × `concurrency`.
 * Pure but for the clock.
 */

/** How much work, in time, a per-key queue holds claimed ahead of its places. */
export const AHEAD_HORIZON_MS = 100;
/** The span over which the finishing rate is measured. */
export const RATE_WINDOW_MS = 1000;

/** Finishes seen within this long of each other are counted together (the window holds ≤ 100 entries). */
const BUCKET_MS = 10;

export class ClaimAhead {
  /** Places freed (runs finished), with when they were seen, oldest first; `sum` is their total. */
  private readonly freed: Array<{ at: number; n: number }> = [];
  private sum = 0;
  /** The capacity last seen, less what claims took since (null: none seen yet). */
  private lastCapacity: number | null = null;

  constructor(
    /** The most to claim ahead (the queue's prefetch). */
    private readonly most: number,
    /** The clock, in ms (the fetcher's local clock). */
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Room for a claim of a per-key queue, given its free capacity (places +
   * prefetch − what it holds): the places free, plus what may be claimed ahead now.
   */
  room(capacity: number): number {
    // What finished since the last look: capacity only grows by runs leaving, and shrinks by claims (claimed()).
    if (this.lastCapacity !== null && capacity > this.lastCapacity) this.record(capacity - this.lastCapacity);
    this.lastCapacity = capacity;
    return capacity - this.most + this.extra();
  }

  /** `n` jobs finished (or started: a rate-limited queue counts its starts) just now. */
  record(n: number): void {
    const t = this.now();
    const last = this.freed[this.freed.length - 1];
    if (last !== undefined && t - last.at < BUCKET_MS) last.n += n;
    else this.freed.push({ at: t, n });
    this.sum += n;
  }

  /** Jobs to hold ahead: the rate of the last RATE_WINDOW_MS × AHEAD_HORIZON_MS, at most `most`. */
  extra(): number {
    const t = this.now();
    for (let first = this.freed[0]; first !== undefined && first.at < t - RATE_WINDOW_MS; first = this.freed[0]) {
      this.sum -= first.n;
      this.freed.shift();
    }
    const first = this.freed[0];
    if (first === undefined) return 0;
    const spanMs = Math.max(AHEAD_HORIZON_MS, t - first.at);
    return Math.min(this.most, Math.ceil((this.sum * AHEAD_HORIZON_MS) / spanMs));
  }

  /** A claim took `n` jobs out of the capacity last passed to room(). */
  claimed(n: number): void {
    if (this.lastCapacity !== null) this.lastCapacity -= n;
  }
}
