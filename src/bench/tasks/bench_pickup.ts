/** Reports the moment it starts, for pickup latency (commit → task start in a thread). */
import { BroadcastChannel } from 'node:worker_threads';

const channel = new BroadcastChannel('jobvisor-bench-pickup');
channel.unref();

export default function benchPickup(_payload: unknown, ctx: { job: { id: string } }): Promise<void> {
  channel.postMessage({ id: ctx.job.id, at: performance.timeOrigin + performance.now() });
  return Promise.resolve();
}
