/**
 * The perkey scenario's no-op task (src/bench/perkey.ts): it checks that no two
 * jobs of one key run at once, as the peers' handlers do (bench/peers/scenarios/perkey.mjs).
 * It marks its key in flight, yields once to the event loop (so a second job of
 * the key handed out at the same time would start meanwhile) and clears it. It
 * reports the most jobs of one key it saw in flight, each time that grows, on a
 * BroadcastChannel; the bench runs one thread, so one module sees every job.
 */
import { BroadcastChannel } from 'node:worker_threads';

const channel = new BroadcastChannel('jobvisor-bench-perkey'); // read by src/bench/perkey.ts
channel.unref();
const inFlight = new Map<string, number>();
let most = 0;

export default async function benchPerkey(payload: { k?: unknown }): Promise<void> {
  const k = String(payload?.k);
  const now = (inFlight.get(k) ?? 0) + 1;
  inFlight.set(k, now);
  if (now > most) {
    most = now;
    channel.postMessage({ mostInFlightPerKey: most });
  }
  await new Promise((resolve) => setImmediate(resolve));
  const left = (inFlight.get(k) ?? 1) - 1;
  if (left === 0) inFlight.delete(k);
  else inFlight.set(k, left);
}
