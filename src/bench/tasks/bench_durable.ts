/**
 * The durable-steps benchmark's task: `steps` no-op steps, then a sleep of
 * `sleepMs` or a wait for signal "go", as the payload says. Reports how long
 * each ctx.step call took (call → its record committed) on a channel the
 * bench listens to; a step replayed from its record is not reported.
 */
import { BroadcastChannel } from 'node:worker_threads';

const channel = new BroadcastChannel('jobvisor-bench-durable');
channel.unref();

interface Payload {
  steps?: number;
  sleepMs?: number;
  wait?: boolean;
}

interface Ctx {
  step<T>(name: string, fn: () => T): Promise<T>;
  sleep(name: string, ms: number): Promise<void>;
  waitFor(name: string, options: { timeout: string }): Promise<{ received: boolean }>;
}

export default async function benchDurable(payload: Payload, ctx: Ctx): Promise<void> {
  const stepMs: number[] = [];
  for (let i = 0; i < (payload.steps ?? 0); i++) {
    let ran = false;
    const t0 = performance.now();
    await ctx.step(`s${i}`, () => {
      ran = true;
      return i;
    });
    if (ran) stepMs.push(performance.now() - t0);
  }
  if (stepMs.length > 0) channel.postMessage({ stepMs });
  if (payload.sleepMs !== undefined) await ctx.sleep('nap', payload.sleepMs);
  if (payload.wait) await ctx.waitFor('go', { timeout: '1h' });
}
