// enqueue: time one bulk enqueue of N no-op jobs, the fastest way the system offers.
// The producer is opened and warmed with one untimed single enqueue first, so the
// timing holds the bulk call alone; afterwards the table must hold exactly N + 1 jobs.
import { nowMs } from '../lib/clock.mjs';

export async function enqueue({ options, adapter, admin }) {
  await adapter.install(admin);
  await adapter.openProducer();
  await adapter.enqueueOne({ warmup: true });
  const t0 = nowMs();
  await adapter.enqueueMany(options.jobs);
  const seconds = (nowMs() - t0) / 1000;
  const present = await adapter.countJobs(admin);
  if (present !== options.jobs + 1) {
    throw new Error(`expected ${options.jobs + 1} jobs after enqueue (1 warm-up), found ${present}`);
  }
  return { seconds, jobsPerSec: options.jobs / seconds, verified: { jobsInDb: present - 1 } };
}
