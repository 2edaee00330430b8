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
  return Math.round(ceiling * (1 - settings.jitter * random()));
}
