/**
 * How a queue limited per key looks for its jobs without a key. They have no
 * index of their own (migration 031 says why), so a claim finds them by
 * reading the queue's first due jobs in claim order, whatever their key: a
 * window of up to KEYLESS_WINDOW of them (claim_limited.ts), or all of them.
 *
 *   - A window that was full and held too few jobs without a key says some may
 *     lie beyond it (`keylessHidden`): the next claim reads every due job, then
 *     such a read comes at most once a second, or every 20 × its duration
 *     (costlyReadGap), so a flood of one key does not make every claim read all
 *     of it.
 *   - A window that was full and held none that the claim took says the head
 *     of the queue is keyed work: the claims of the next KEYLESS_QUIET_MS read
 *     no window (`none`). Reading it cost a claim over 100 keys a row per due
 *     job it held, about 300 for some 50 jobs claimed, even in a queue where
 *     every job has a key: skipping it ran that queue 1.10× as fast (BENCHMARKS.md).
 *     A job without a key that comes in behind such a head is behind the window
 *     anyway and waits for the full read as before; one of a higher priority,
 *     which the window would have found, waits up to KEYLESS_QUIET_MS longer.
 *     A claim that takes a job without a key ends the quiet, and so does one
 *     without a window that takes nothing (its keyed work has run out or is
 *     at its limits: a job without a key may be all that is due).
 *
 * Pure: the caller passes the local clock's readings (ms).
 */
import { costlyReadGap } from '../../cached.ts';
import type { KeylessScan } from '../../queue/claim_limited.ts';

/** The least time between two claims that read every due job for ones without a key. */
export const KEYLESS_FULL_MIN_MS = 1000;
/** How long after a full window without a job without a key the claims read none. */
export const KEYLESS_QUIET_MS = 100;

export class KeylessReads {
  private hidden = false;
  private fullAt = 0;
  private quietUntil = 0;

  /** How the claim starting at `nowMs` should look for jobs without a key. */
  scan(nowMs: number): KeylessScan {
    if (this.hidden && nowMs >= this.fullAt) return 'all';
    return nowMs < this.quietUntil ? 'none' : 'window';
  }

  /** What a claim made with `scan`, from `startedMs` to `endedMs`, reported. */
  observe(
    scan: KeylessScan,
    claim: { keylessHidden: boolean; took: number; tookKeyless: boolean },
    startedMs: number,
    endedMs: number,
  ): void {
    if (scan === 'all') this.fullAt = endedMs + costlyReadGap(endedMs - startedMs, KEYLESS_FULL_MIN_MS);
    // A claim without a window that took nothing may have missed a due job without a key,
    // and nothing else would wake the fetcher for it (it asks when the next job is due: now).
    if (claim.tookKeyless || (scan === 'none' && claim.took === 0)) this.quietUntil = 0;
    else if (scan === 'window' && claim.keylessHidden) this.quietUntil = endedMs + KEYLESS_QUIET_MS;
    this.hidden = claim.keylessHidden;
  }
}
