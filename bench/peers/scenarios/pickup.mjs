// pickup: an idle worker; N single jobs are enqueued one at a time, each after the
// previous one's handler started plus a random 0–50 ms pause (so a polling system's
// phase is not always the same). Latency = handler start − enqueue call returned,
// both on the shared wall clock (lib/clock.mjs). Three warm-up jobs go first and are
// not counted. A handler that starts before the enqueue call returned counts as 0 ms.
import { nowMs, percentile, sleep } from '../lib/clock.mjs';
import { prepareWorkers } from '../lib/workers.mjs';

const WARMUPS = 3;
const START_TIMEOUT_MS = 30_000;

export async function pickup({ options, adapter, admin, failed, track }) {
  await adapter.install(admin);
  await adapter.openProducer();

  const waiting = new Map();
  const seen = new Map();
  const workers = track(
    await prepareWorkers({ ...options }, adapter, {
      onJob: (payload, at) => {
        seen.set(payload.seq, (seen.get(payload.seq) ?? 0) + 1);
        waiting.get(payload.seq)?.(at);
      },
      onError: failed.fail,
    }),
  );
  await Promise.race([workers.start(), failed.promise]);

  const runOne = async (seq) => {
    const started = new Promise((resolve) => waiting.set(seq, resolve));
    await adapter.enqueueOne({ seq });
    const enqueuedAt = nowMs();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`job ${seq} did not start within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
    });
    const startedAt = await Promise.race([started, timeout, failed.promise]).finally(() => clearTimeout(timer));
    waiting.delete(seq);
    return startedAt - enqueuedAt;
  };

  for (let i = 1; i <= WARMUPS; i++) {
    await runOne(-i);
    await sleep(Math.random() * 50);
  }
  const latencies = [];
  let early = 0;
  const t0 = nowMs();
  for (let seq = 0; seq < options.jobs; seq++) {
    const latency = await runOne(seq);
    if (latency < 0) early++;
    latencies.push(Math.max(0, latency));
    await sleep(Math.random() * 50);
  }
  const seconds = (nowMs() - t0) / 1000;

  const total = options.jobs + WARMUPS;
  const deadline = nowMs() + 10_000;
  let done = 0;
  while ((done = await adapter.countDone(admin, total)) < total && nowMs() < deadline) await sleep(5);
  await workers.stop();
  if (done !== total) throw new Error(`database reports ${done} jobs finished, expected ${total}`);
  const repeats = [...seen.values()].filter((count) => count > 1).length;

  latencies.sort((a, b) => a - b);
  return {
    seconds,
    jobsPerSec: null,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    verified: { doneInDb: done - WARMUPS, startedBeforeEnqueueReturned: early, jobsRunTwice: repeats },
  };
}
