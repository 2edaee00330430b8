// burst: the worker starts on an empty table and runs 2,000 no-op jobs (warm-up,
// as `jobvisor bench` warms jobvisor), then N jobs arrive in ONE call of the system's
// bulk enqueue (one statement); the clock runs from the moment that call returns
// until the database says all N are finished, polled every 2 ms once the handler
// starts reach N.
import { nowMs, sleep } from '../lib/clock.mjs';
import { prepareWorkers } from '../lib/workers.mjs';

export const WARM_UP = 2000;

export async function burst(context) {
  const { adapter } = context;
  const n = context.options.jobs;
  const { seconds, done, handled } = await measureBurst(context, {
    enqueue: (count, opts) => adapter.enqueueMany(count, opts),
  });
  return { seconds, jobsPerSec: n / seconds, verified: { doneInDb: done - WARM_UP, handlerRuns: handled - WARM_UP } };
}

/**
 * The burst's measurement, shared by the scenarios clocked like it (burst, perkey):
 * workers started, WARM_UP jobs run, then options.jobs jobs enqueued in one call
 * (`enqueue(count, { oneCall })`), timed until the database says all are done.
 * `onJob` is the handler's own work (in-process runs). Throws when the database
 * or the handlers account for fewer jobs than were enqueued.
 */
export async function measureBurst({ options, adapter, admin, failed, track }, { enqueue, onJob }) {
  const n = options.jobs;
  await adapter.install(admin);
  await adapter.openProducer();
  let started = 0;
  let waiter = null;
  const reached = (target) =>
    new Promise((resolve) => {
      if (started >= target) resolve();
      else waiter = { target, resolve };
    });
  const workers = track(
    await prepareWorkers(options, adapter, {
      onJob,
      onCount: (delta) => {
        started += delta;
        if (waiter && started >= waiter.target) (waiter.resolve(), (waiter = null));
      },
      onError: failed.fail,
    }),
  );
  await Promise.race([workers.start(), failed.promise]);

  const allDone = async (total) => {
    await Promise.race([reached(total), failed.promise]);
    let done;
    while ((done = await adapter.countDone(admin, total)) < total) await Promise.race([sleep(2), failed.promise]);
    return done;
  };
  await enqueue(WARM_UP);
  await allDone(WARM_UP);

  await enqueue(n, { oneCall: true }); // the burst: one call, one statement
  const t0 = nowMs();
  const done = await allDone(WARM_UP + n);
  const seconds = (nowMs() - t0) / 1000;

  const { handled } = await workers.stop();
  if (done !== WARM_UP + n) throw new Error(`database reports ${done} jobs finished, expected ${WARM_UP + n}`);
  if (handled < WARM_UP + n) throw new Error(`only ${handled} handler runs for ${WARM_UP + n} finished jobs`);
  return { seconds, done, handled };
}
