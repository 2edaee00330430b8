/**
 * A rate-limited claim places each start by the database's clock, measured by
 * the claims themselves (db_clock.ts); a start may stray from its slot by the
 * measurement's error, and its window narrows by twice that
 * (queue/rate_slots.ts, startWindow). When the error leaves no window (every
 * claim's round trip long: a loaded machine, a starved event loop), claiming
 * would only hand the jobs back, and claiming again would measure as badly
 * (the claim waits for the queue's lock). So the claim first reads the clock
 * alone (queue/clock_probe.ts), a few times, keeping the best reading; if
 * none is good enough it claims nothing and tries again a little later. The
 * queue's jobs wait meanwhile; none starts early or late.
 */
import { readDbClock } from '../../queue/clock_probe.ts';
import { maxClockErrorMs, PACING_HORIZON_MS } from '../../queue/claim_limited.ts';
import type { Db } from '../../queue/sql.ts';
import type { DbClock } from './db_clock.ts';

/** How many readings of the clock a claim takes at most before it gives up for now. */
export const CLOCK_PROBES = 3;
/** How soon a claim put off by an uncertain clock tries again (ms). */
export const CLOCK_RETRY_MS = 200;
/**
 * An error bound (ms) above which a usable clock is still read on the side,
 * at most once per CLOCK_REFRESH_MS, for a better reading: each ms of error
 * takes 2 ms off every start window, and under load the claims' own round
 * trips rarely come back fast (a reading ages by 1 ms per 10 s meanwhile).
 */
export const CLOCK_COMFORT_MS = 3;
export const CLOCK_REFRESH_MS = 1000;

/**
 * Whether a rate-limited claim may go ahead: the database's clock as the
 * claims measure it is good enough to place the starts of a rate limit of
 * `periodMs` (slots up to PACING_HORIZON_MS ahead, the sample aged until
 * then). If it is not, it is read again up to CLOCK_PROBES times, at most
 * once per CLOCK_RETRY_MS however often the queue is woken (a notification
 * per enqueued job must not become a burst of reads).
 */
export class ClockGate {
  /** When the clock may be read again after readings that left it too uncertain (local ms). */
  private nextProbeAtMs = 0;
  /** When a usable but rough clock may be read on the side again (local ms). */
  private nextRefreshAtMs = 0;

  constructor(
    private readonly dbClock: DbClock,
    /** The local clock the claims read the database's against. */
    private readonly clock: () => number,
  ) {}

  /**
   * Null: go ahead. Else how many ms until the claim should be tried again.
   * @throws the database's error (nothing was claimed).
   */
  async wait(db: Db, periodMs: number): Promise<number | null> {
    const most = maxClockErrorMs(periodMs);
    const uncertain = (): boolean => this.dbClock.errorAt(this.dbClock.now() + 2 * PACING_HORIZON_MS) > most;
    if (!uncertain()) {
      this.refresh(db);
      return null;
    }
    const now = this.dbClock.now();
    if (now < this.nextProbeAtMs) return this.nextProbeAtMs - now;
    for (let probes = 0; probes < CLOCK_PROBES; probes++) {
      this.dbClock.observe(await readDbClock(db, this.clock));
      if (!uncertain()) return null;
    }
    this.nextProbeAtMs = this.dbClock.now() + CLOCK_RETRY_MS;
    return CLOCK_RETRY_MS;
  }

  /** Reads the clock on the side, not awaited, when it is usable but rough (CLOCK_COMFORT_MS). */
  private refresh(db: Db): void {
    const now = this.dbClock.now();
    if (now < this.nextRefreshAtMs || this.dbClock.errorMs <= CLOCK_COMFORT_MS) return;
    this.nextRefreshAtMs = now + CLOCK_REFRESH_MS;
    // A failed reading changes nothing: the claims report the database's errors.
    void readDbClock(db, this.clock).then(
      (sample) => this.dbClock.observe(sample),
      () => {},
    );
  }
}
