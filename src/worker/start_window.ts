/**
 * A rate-limited job's start window, kept in the thread that runs it: the
 * last point before its task is called, so the start the task sees is the
 * start the limit counted. The window is the readings of Date.now(), both
 * ends included, at which the task starts within [slot, slot + guard] by the
 * database's clock, the supervisor's error on that clock already taken off
 * both ends (queue/rate_slots.ts, startWindow, says why that keeps the limit).
 * A job that arrives early waits for its window; one that arrives late (a
 * starved event loop, a busy thread, a late timer) is not started: a late
 * start would bunch with the on-time ones and put more than `count` starts in
 * a window.
 */
import type { TaskError } from './protocol.ts';

/**
 * Resolves when the job may start (null), or with how many ms past its window
 * it is (then it must not start). `clock` is Date.now, the clock the
 * supervisor set the window with.
 */
export async function reachStartWindow(
  notBeforeMs: number,
  notAfterMs: number,
  clock: () => number = Date.now,
): Promise<number | null> {
  // A timer may fire early by the clock: libuv counts from the time its loop
  // iteration began, so it is checked again (seen: up to 3 ms early on a busy machine).
  const from = Math.ceil(notBeforeMs);
  let now = clock();
  while (now < from) {
    await new Promise((resolve) => setTimeout(resolve, from - now));
    now = clock();
  }
  return now > notAfterMs ? now - notAfterMs : null;
}

/** What the thread reports for a job it did not start: the supervisor hands it back. */
export function missedWindow(lateMs: number): TaskError {
  return {
    name: 'MissedStartSlot',
    message: `reached ${Math.round(lateMs)} ms past its rate-limit start window`,
    permanent: false,
    retryInMs: null,
    lateMs,
  };
}
