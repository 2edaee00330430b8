// One clock for every process in a run: performance.timeOrigin + performance.now()
// is wall-clock milliseconds with sub-millisecond resolution, so a timestamp taken in
// a worker child can be compared with one taken in the parent.
import { performance } from 'node:perf_hooks';

export const nowMs = () => performance.timeOrigin + performance.now();

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Nearest-rank percentile of an ascending array; null when it is empty. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export const round = (value, digits = 3) => (value == null ? null : Number(value.toFixed(digits)));
