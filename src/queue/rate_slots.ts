/**
 * The start slots of rate-limited queues: how far ahead a claim places a
 * job's start, the guard added to a rate window, and how late a task may start
 * after its slot. Pure arithmetic, shared by the claim (claim_limited.ts), the
 * supervisor that holds jobs until their slot and the worker thread's check.
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
 * 50 ms and cut a 2,000/s limit to 800 jobs/s. The guard, 2.5 % of the period and at most
 * 25 ms, absorbs the timers' jitter (a 1-s limit runs at up to 97.5 %).
 */
export const RATE_START_DELAY_MS = 10;

/**
 * A queue-wide rate limit hands out start slots at most this far ahead: a
 * claim takes up to a second's worth, which the supervisor holds until each
 * slot comes (well within the shortest lease, 3 s, so no lease ends unrenewed).
 */
export const PACING_HORIZON_MS = 1000;

export function rateWindowMs(periodMs: number): number {
  return periodMs + Math.min(25, periodMs * 0.025);
}

/**
 * How late a rate-limited task may start after its slot: 80 % of the guard
 * (20 ms for a period of 1 s or more), checked in the worker thread just
 * before the task is called. A task starts within [slot − e, slot + this],
 * where e is the supervisor's error on the database's clock (db_clock.ts,
 * about half a claim's round trip); since the slots of any window of
 * period + guard hold at most `count`, any window of `period` holds at most
 * `count` starts as long as e stays within the guard's other 20 % (5 ms at
 * 1 s). A run that misses its slot is handed back and claimed again for a new
 * one: a start that bunched with on-time ones would break the limit.
 */
export function startToleranceMs(periodMs: number): number {
  return (rateWindowMs(periodMs) - periodMs) * 0.8;
}
