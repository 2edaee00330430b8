/**
 * A value recomputed at most once per `ttlMs`, shared by every viewer of one
 * dashboard process: the throughput charts, whose day-long query reads every
 * row finished in the last day (~570 ms on 1 M rows, bench/dashboard.ts) while
 * the overview auto-refreshes every 10 s in each open browser. Concurrent
 * callers share one load in flight; a failed load is not kept.
 */
export function cached<T>(ttlMs: number, load: () => Promise<T>, now: () => number = Date.now): () => Promise<T> {
  let value: { at: number; data: T } | undefined;
  let inFlight: Promise<T> | undefined;
  return () => {
    if (value && now() - value.at < ttlMs) return Promise.resolve(value.data);
    inFlight ??= load().then(
      (data) => {
        value = { at: now(), data };
        inFlight = undefined;
        return data;
      },
      (err: unknown) => {
        inFlight = undefined;
        throw err;
      },
    );
    return inFlight;
  };
}
