/**
 * The start slots of rate-limited queues: how far ahead a claim places a
 * job's start, the guard added to a rate window, and the readings of the local
 * clock at which a task may start around its slot. Pure arithmetic, shared by
 * the claim (claim_limited.ts), the supervisor that holds jobs until their
 * slot and the worker thread's check.
 */

/**
 * A rate limit counts starts, but the database sees claims. From a claim to
 * the task's first line takes a commit, a round trip and a thread hand-off:
 * measured with three supervisors on two busy cores, 14 ms at the median and
 * 79 ms at worst, and a hundred jobs handed to one thread at once start over
 * tens of milliseconds. A full window claimed at once and started that way put
 * 300 starts into one 1-s window of the times tasks saw, under a limit of 200,
 * although every 1-s window of claims held 200.
 *
 * So a rate-limited claim gives each job a start time at least
 * RATE_START_DELAY_MS ahead and records that as its start; the supervisor
 * holds each job until its time (fetcher.ts). A queue-wide limit also paces
 * the starts, one every (period + guard) / count, so a late timer moves one
 * start, not a window's worth; with a backlog, a claim's slots lie ahead of
 * the claim anyway, so the delay only matters to a queue that was idle. It is
 * short because held jobs take the queue's places: 50 ms held 50 places for
 * 50 ms and cut a 2,000/s limit to 800 jobs/s. The guard, 2.5 % of the
 * period (15 to 25 ms), is how far a start may stray from its slot
 * (startWindow): a 1-s limit runs at up to 97.5 %.
 */
export const RATE_START_DELAY_MS = 10;

/**
 * A queue-wide rate limit hands out start slots at most this far ahead: a
 * claim takes up to a second's worth, which the supervisor holds until each
 * slot comes (well within the shortest lease, 3 s, so no lease ends unrenewed).
 */
export const PACING_HORIZON_MS = 1000;

/**
 * The window a rate limit counts its slots in: the period plus a guard of
 * 2.5 % of the period, at least 15 ms and at most 25 ms. The guard is how far
 * a start may stray from its slot (startWindow below). At least 15 ms because
 * a start is placed with clocks read to the whole millisecond and a measured
 * offset: a 2.5-ms guard (a 100-ms period) left no window however good the
 * measurement, and 15 ms leave one up to a 5-ms round trip (a 100-ms limit
 * now runs at up to 87 %).
 */
export function rateWindowMs(periodMs: number): number {
  return periodMs + Math.min(25, Math.max(15, periodMs * 0.025));
}

/**
 * The least start window (ms between its first and last local reading) a job
 * is held for. A narrower one would have the thread miss it on a common late
 * timer, and the job would be handed back and claimed again for nothing.
 */
export const MIN_START_WINDOW_MS = 4;

/**
 * The largest error on the database's clock (DbClock.errorMs) that leaves
 * every slot a start window (startWindow): guard − 2e − 1 less 2 ms of
 * rounding must stay at least MIN_START_WINDOW_MS. 9 ms for a period of 1 s or
 * more: a round trip of about 15 ms at best. A claim finding the clock worse
 * measures it again first (supervisor/claim/clock_gate.ts).
 */
export function maxClockErrorMs(periodMs: number): number {
  return (rateWindowMs(periodMs) - periodMs - 1 - 2 - MIN_START_WINDOW_MS) / 2;
}

/** When a rate-limited task may start: readings of the local clock, both ends included. */
export interface StartWindow {
  notBeforeMs: number;
  notAfterMs: number;
}

/**
 * The readings of the local clock (Date.now(), whole ms) at which a task may
 * start so that, by the database's clock, it starts within [S, S + guard] of
 * its slot S, whatever the supervisor's error on that clock; null when that
 * error leaves less than MIN_START_WINDOW_MS (the job is handed back, not
 * started early or late). `slotMs` is S converted to the local clock
 * (DbClock.toLocal) and `errorMs` bounds that conversion's error (DbClock.errorMs).
 *
 * Why this is exact. The slots of any window of period + guard hold at most
 * `count` (claim_limited_sql.ts). If every start lies in [S, S + guard] by the
 * database's clock, the starts in a window [t, t + period) have slots in
 * [t − guard, t + period), a window of period + guard, so at most `count`. The
 * true local moment of S lies within slotMs ± e; a reading n means a moment
 * in [n, n + 1). So a reading n ≥ slotMs + e is at or after S, and one with
 * n + 1 ≤ slotMs + guard − e is at or before S + guard: the window is
 * [⌈slotMs + e⌉, ⌊slotMs + guard − e − 1⌋], guard − 2e − 1 wide less rounding.
 * The old window, [slotMs, slotMs + 80 % of the guard], kept this only while
 * 2e + 1 ≤ 20 % of the guard (2 ms at 1 s): three supervisors, one 5 s ahead,
 * on a loaded machine put 21 starts into one 1-s window of a 20/1s limit.
 * What the bound leaves out: the moment between the thread's check and the
 * task's first line (microseconds, unless the thread is preempted there).
 */
export function startWindow(slotMs: number, errorMs: number, periodMs: number): StartWindow | null {
  const guard = rateWindowMs(periodMs) - periodMs;
  const notBeforeMs = Math.ceil(slotMs + errorMs);
  const notAfterMs = Math.floor(slotMs + guard - errorMs - 1);
  return notAfterMs - notBeforeMs >= MIN_START_WINDOW_MS ? { notBeforeMs, notAfterMs } : null;
}
