// perkey: flow control, one job at a time per key. N no-op jobs spread round-robin
// over K keys (--keys, job i has key k<i mod K>), each system's own per-key limit set
// to 1 (Graphile: a named queue per key; pg-boss: a group per key with
// groupConcurrency 1). Measured like burst, warm against warm: the worker runs 2,000
// keyed jobs first, then N keyed jobs arrive in ONE call of the bulk enqueue, and the
// clock runs from the moment that call returns until the database says all are done
// (polled every 2 ms once the handler starts reached the total).
//
// The guarantee is checked, so that no system is measured doing less: each handler
// marks its key in flight, yields once to the event loop (setImmediate, so a second
// job of the same key handed out at the same time would start meanwhile), and clears
// it. A handler that starts while its key is in flight is an overlap; any overlap
// fails the run. jobvisor's side (src/bench/perkey.ts) runs the same check.
import { measureBurst, WARM_UP } from './burst.mjs';

export async function perkey(context) {
  const { adapter } = context;
  const n = context.options.jobs;
  const keys = context.options.keys;
  const inFlight = new Set();
  const seenKeys = new Set();
  let overlaps = 0;
  const { seconds, done, handled } = await measureBurst(context, {
    enqueue: (count, opts) => adapter.enqueueKeyed(count, keys, opts),
    onJob: async (payload) => {
      const k = payload?.k;
      if (typeof k !== 'string') throw new Error(`a job without its key ran: ${JSON.stringify(payload)}`);
      seenKeys.add(k);
      if (inFlight.has(k)) overlaps++;
      inFlight.add(k);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight.delete(k);
    },
  });
  if (overlaps > 0) throw new Error(`${overlaps} jobs started while another job of their key was running`);
  const expectedKeys = Math.min(keys, Math.max(n, WARM_UP));
  if (seenKeys.size !== expectedKeys) throw new Error(`jobs of ${seenKeys.size} keys ran, expected ${expectedKeys}`);
  return {
    seconds,
    jobsPerSec: n / seconds,
    verified: { doneInDb: done - WARM_UP, handlerRuns: handled - WARM_UP, keys: seenKeys.size, overlaps },
  };
}
