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
 * Whether `dbClock` is good enough to place the starts of a rate limit of
 * `periodMs` (slots up to PACING_HORIZON_MS ahead, the sample aged until
 * then), after reading it again up to CLOCK_PROBES times if it was not.
 * `clock` is the local clock the claims read it with.
 * @throws the database's error (nothing was claimed).
 */
export async function clockReady(db: Db, dbClock: DbClock, periodMs: number, clock: () => number): Promise<boolean> {
  const most = maxClockErrorMs(periodMs);
  const uncertain = (): boolean => dbClock.errorAt(dbClock.now() + 2 * PACING_HORIZON_MS) > most;
  for (let probes = 0; uncertain(); probes++) {
    if (probes === CLOCK_PROBES) return false;
    dbClock.observe(await readDbClock(db, clock));
  }
  return true;
}
