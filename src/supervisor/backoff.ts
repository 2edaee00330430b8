/**
 * Retry delays: exponential from `base`, capped at `max`, with a random part.
 * jitter = 0: exactly base·2^(attempt−1); jitter = 1: anywhere from 0 to that.
 * The random part keeps a burst of failures from retrying in lockstep.
 */
export interface BackoffSettings {
  base: number;
  max: number;
  jitter: number;
}

export function retryDelay(attempt: number, settings: BackoffSettings, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 52);
  const ceiling = Math.min(settings.max, settings.base * 2 ** exponent);
  return clampDelay(Math.round(ceiling * (1 - settings.jitter * random())));
}

/**
 * The longest retry delay written to the database: 365 days. A task may ask
 * for more than `backoff.max` on purpose (a quota that resets tomorrow), so its
 * own `retryInMs` is not cut to `backoff.max`; but 1e16 ms is past what a
 * timestamp can hold, and the whole batch's write failed with `interval out of
 * range`. A year is far beyond any sensible retry and far inside the range.
 */
export const MAX_RETRY_DELAY_MS = 365 * 24 * 3600 * 1000;

/**
 * A delay the database can add to now(): whole ms from 0 to MAX_RETRY_DELAY_MS.
 * Negative values and NaN become 0 (retry now), +Infinity the cap.
 */
export function clampDelay(ms: number): number {
  if (Number.isNaN(ms) || ms <= 0) return 0;
  if (ms >= MAX_RETRY_DELAY_MS) return MAX_RETRY_DELAY_MS;
  return Math.round(ms);
}
