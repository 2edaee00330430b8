// process: N no-op jobs are preloaded (untimed, then ANALYZEd), the worker(s) start,
// and the clock runs from the start call until the database says all N are finished.
// Handler starts are counted as they happen; once they reach N the database is
// polled every 2 ms, so the end time is the first poll that sees N finished.
import { nowMs, sleep } from '../lib/clock.mjs';
import { prepareWorkers } from '../lib/workers.mjs';

export async function processJobs({ options, adapter, admin, failed, track }) {
  const n = options.jobs;
  await adapter.install(admin);
  await adapter.openProducer();
  await adapter.enqueueMany(n);
  await adapter.closeProducer();
  const present = await adapter.countJobs(admin);
  if (present !== n) throw new Error(`preload left ${present} jobs, expected ${n}`);
  for (const schema of adapter.schemas) await admin.analyzeSchema(schema);

  let started = 0;
  let resolveAllStarted;
  const allStarted = new Promise((resolve) => (resolveAllStarted = resolve));
  const workers = track(
    await prepareWorkers(options, adapter, {
      onCount: (delta) => {
        started += delta;
        if (started >= n) resolveAllStarted();
      },
      onError: failed.fail,
    }),
  );

  const t0 = nowMs();
  await Promise.race([workers.start(), failed.promise]);
  await Promise.race([allStarted, failed.promise]);
  let done = 0;
  while ((done = await adapter.countDone(admin, n)) < n) {
    await Promise.race([sleep(2), failed.promise]);
  }
  const seconds = (nowMs() - t0) / 1000;

  const { handled } = await workers.stop();
  if (done !== n) throw new Error(`database reports ${done} jobs finished, expected ${n}`);
  if (handled < n) throw new Error(`only ${handled} handler runs for ${n} finished jobs`);
  return { seconds, jobsPerSec: n / seconds, verified: { doneInDb: done, handlerRuns: handled } };
}
