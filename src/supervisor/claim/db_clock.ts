/**
 * The database's clock as seen from this supervisor. A rate-limited claim
 * gives each job a start slot by the database's clock (one clock for every
 * supervisor); the fetcher holds the job until that moment by its own clock.
 * A supervisor whose clock is 20 s behind held every job 20 s past its lease,
 * so the jobs were reaped and claimed again, and none finished; one 5 s ahead
 * started every slot at once.
 *
 * Each claim is an NTP exchange (claim_limited.ts, ClockSample): sent and
 * received by the local clock, received and answered by the database's. The
 * offset is ((dbReceived − sent) + (dbReplied − received)) / 2, off by at most
 * half the round trip less the database's own time on the statement, so a
 * claim that takes long under the queue's lock costs no accuracy. Read
 * against the middle of the round trip instead, the claim's clock_timestamp()
 * put starts up to 5 ms early. Like NTP, the sample kept is the one with the
 * smallest error bound, aged by AGING_PER_MS for the drift since it was taken,
 * so a slow answer (a starved event loop) never replaces a good reading with a
 * worse one, and a new good one always wins.
 *
 * Invariant: `errorMs` bounds how far toLocal() may be off: the kept sample's
 * half round trip, aged, plus READING_MS for the local clock's whole-ms
 * readings; without a sample the offset is 0 and errorMs Infinity. A start
 * placed by it lands within ± errorMs of its slot, so a rate-limited job's
 * window narrows by 2 × errorMs (queue/rate_slots.ts, startWindow), and a claim
 * finding errorMs too large for any window measures the clock again before it
 * claims (clock_gate.ts).
 */
import type { ClockSample } from '../../queue/claim_limited.ts';

/** Uncertainty added per ms of a sample's age: 1 ms per 10 s, far above a real clock's drift. */
const AGING_PER_MS = 1e-4;

/**
 * What whole-ms readings add to the bound. A reading n means a moment in
 * [n, n + 1): the round trip may be up to 1 ms longer than read, and the
 * offset, read from two such readings, up to 1 ms higher. The true offset lies
 * in (offset − half − 1.5, offset + half + 0.5), so ± (half + 1.5) bounds it.
 */
const READING_MS = 1.5;

export class DbClock {
  private offsetMs = 0;
  private halfRoundTripMs = Infinity;
  private takenAtMs = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  /** The local clock this one is measured against (ms since the epoch). */
  now(): number {
    return this.clock();
  }

  observe(s: ClockSample): void {
    const half = Math.max(0, s.receivedMs - s.sentMs - Math.max(0, s.dbRepliedMs - s.dbReceivedMs)) / 2;
    if (half + READING_MS > this.errorAt(s.receivedMs)) return;
    this.offsetMs = (s.dbReceivedMs - s.sentMs + (s.dbRepliedMs - s.receivedMs)) / 2;
    this.halfRoundTripMs = half;
    this.takenAtMs = s.receivedMs;
  }

  /** How far toLocal() may be off now, in ms. */
  get errorMs(): number {
    return this.errorAt(this.clock());
  }

  /** How far toLocal() may be off at `localMs` (later than now: the sample will have aged), in ms. */
  errorAt(localMs: number): number {
    return this.halfRoundTripMs + READING_MS + Math.max(0, localMs - this.takenAtMs) * AGING_PER_MS;
  }

  /** A moment by the database's clock, by the local clock (ms since the epoch). */
  toLocal(dbMs: number): number {
    return dbMs - this.offsetMs;
  }

  /** The database's clock minus the local one, in ms. */
  get offset(): number {
    return this.offsetMs;
  }
}
