/**
 * A value loaded at most once per time-to-live and shared by every caller:
 * concurrent callers share one load in flight. The time-to-live counts from
 * the end of the load and may depend on how long the load took, so a read
 * that grows slow is repeated less often.
 *
 * Used for the dashboard's throughput charts, whose day-long query reads every
 * row finished in the last day (~570 ms on 1 M rows, bench/dashboard.ts) while
 * the overview auto-refreshes every 10 s in each open browser, and for the
 * database gauges of /metrics (src/metrics/database_gauges.ts).
 *
 * A failed load is kept for `retryMs` (default 0: not kept), so a flood of
 * callers cannot turn a failing read into a query per call.
 */
export function cached<T>(
  ttlMs: number | ((lastLoadMs: number) => number),
  load: () => Promise<T>,
  { now = () => performance.now(), retryMs = 0 }: { now?: () => number; retryMs?: number } = {},
): () => Promise<T> {
  const ttl = typeof ttlMs === 'number' ? () => ttlMs : ttlMs;
  let value: { at: number; data: T; loadMs: number } | undefined;
  let failure: { at: number; err: Error } | undefined;
  let inFlight: Promise<T> | undefined;
  return () => {
    if (failure && now() - failure.at < retryMs) return Promise.reject(failure.err);
    if (value && now() - value.at < ttl(value.loadMs)) return Promise.resolve(value.data);
    const started = now();
    inFlight ??= load().then(
      (data) => {
        const at = now();
        value = { at, data, loadMs: at - started };
        failure = undefined;
        inFlight = undefined;
        return data;
      },
      (err: unknown) => {
        failure = { at: now(), err: err instanceof Error ? err : new Error(String(err)) };
        inFlight = undefined;
        throw err;
      },
    );
    return inFlight;
  };
}

/**
 * How long after a costly read ended to wait before running it again:
 * `factor` times what it took (so it uses at most 1/factor of a core), and
 * never less than `minMs`. The gauges' counts and the per-key claim's full
 * read for jobs without a key both follow it.
 */
export const COSTLY_READ_SPACING = 20;

export function costlyReadGap(lastMs: number, minMs: number, factor = COSTLY_READ_SPACING): number {
  return Math.max(minMs, factor * lastMs);
}
