/**
 * When a queue limited per key claims again after a claim its keys cut short.
 *
 * Such a claim took every key that had room; what it left behind are keys at
 * their limit, most of them held by this supervisor's own runs, the ones it
 * has just claimed among them. The next claim can take a key only once its
 * run has ended (an ended run lends its slot: transfers.ts). Claimed at once,
 * as the fetcher used to whenever capacity freed during a claim, the next
 * claim came before the last one's jobs had ended, found only the keys of the
 * claim before, and every key turned over once every two claims: 20,000 no-op
 * jobs over 100 keys (`perKeyConcurrency` 1, 50 places) took 420 claims of
 * about 53 jobs, 3.4 ms each, and ran at 11,300 jobs/s.
 *
 * So in a queue whose keys hold few slots beside its places (fewKeys()), after
 * a claim that visited every key with a pending job and still came back
 * short, the next claim waits until TURNOVER_SHARE of the jobs it took have
 * ended, or for as long as that claim took (at most TURNOVER_WAIT_MOST_MS),
 * whichever comes first: a key that frees meanwhile waits for the next claim
 * anyway, and no longer than a claim lasts. The same burst then took 215
 * claims of about 102 jobs, 5.5-7 ms each, at 1.10-1.27× the throughput in
 * four interleaved A/B runs (BENCHMARKS.md). Slow jobs end after the wait
 * instead, so each claim comes at most one claim's time later than before. A
 * claim woken by new jobs (a notification, the poll) does not wait. With many
 * keys a claim made at once still finds plenty of them free, and waiting only
 * idles the places: a first version that waited after every short claim ran
 * 0.75× over 10,000 keys and 0.87× over 1,000, hence fewKeys().
 * The caller passes the clock's readings; the wait's end is a timer here.
 */

/** The share of a key-bound claim's jobs that end before the next claim. */
export const TURNOVER_SHARE = 0.9;
/** The longest the next claim waits for them. */
export const TURNOVER_WAIT_MOST_MS = 50;

/**
 * Whether `keys` hold so few slots beside the queue's places that the keys, not
 * the places, bound it: at most two claims of `concurrency` fill them all.
 */
export function fewKeys(keys: number, perKeyConcurrency: number, concurrency: number): boolean {
  return keys * perKeyConcurrency <= 2 * concurrency;
}

export class KeyTurnover {
  /** Capacity to reach before the next claim (null: no wait). */
  private awaited: number | null = null;
  /** When the wait ends whatever has ended (ms, the caller's clock). */
  private until = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly settings: { concurrency: number; perKeyConcurrency?: number },
    /** Called when the wait ends by time (the fetcher then looks at its capacity again). */
    private readonly waitEnded: () => void,
  ) {}

  /**
   * A claim cut short with `keys` keys visited, every one with a pending job,
   * took `took` jobs in `claimMs` and left the queue's capacity at `capacity`
   * (its jobs counted): with few keys, the next claim waits.
   */
  cutShort(keys: number, took: number, capacity: number, claimMs: number, nowMs: number): void {
    this.clear();
    const { concurrency, perKeyConcurrency = 1 } = this.settings;
    if (took === 0 || !fewKeys(keys, perKeyConcurrency, concurrency)) return;
    const waitMs = Math.min(TURNOVER_WAIT_MOST_MS, Math.max(1, claimMs));
    this.awaited = capacity + Math.ceil(TURNOVER_SHARE * took);
    this.until = nowMs + waitMs;
    this.timer = setTimeout(this.waitEnded, waitMs);
    this.timer.unref();
  }

  /** Nothing to wait for: a claim that was not cut short by its keys, a pause, a stop. */
  clear(): void {
    this.awaited = null;
    clearTimeout(this.timer);
  }

  /** Whether a claim may start now, at the queue's `capacity`. */
  ready(capacity: number, nowMs: number): boolean {
    if (this.awaited === null) return true;
    if (capacity < this.awaited && nowMs < this.until) return false;
    this.clear();
    return true;
  }
}
