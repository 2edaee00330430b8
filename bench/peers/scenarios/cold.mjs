// cold: N no-op jobs are preloaded (untimed, then ANALYZEd); the clock starts when
// the worker process is forked, so it includes Node's start-up and loading the
// library, and stops when the database says all N are finished. What a new
// worker process meets when it joins a backlog.
import { nowMs, sleep } from '../lib/clock.mjs';
import { prepareWorkers } from '../lib/workers.mjs';

export async function cold({ options, adapter, admin, failed, track }) {
  const n = options.jobs;
  await adapter.install(admin);
  await adapter.openProducer();
  await adapter.enqueueMany(n);
  await adapter.closeProducer();
  for (const schema of adapter.schemas) await admin.analyzeSchema(schema);

  const t0 = nowMs();
  const workers = track(await prepareWorkers({ ...options, children: true }, adapter, { onError: failed.fail }));
  await Promise.race([workers.start(), failed.promise]);
  let done;
  while ((done = await adapter.countDone(admin, n)) < n) await Promise.race([sleep(2), failed.promise]);
  const seconds = (nowMs() - t0) / 1000;

  const { handled } = await workers.stop();
  if (done !== n) throw new Error(`database reports ${done} jobs finished, expected ${n}`);
  return { seconds, jobsPerSec: n / seconds, verified: { doneInDb: done, handlerRuns: handled } };
}
