// A worker child process for --processes P > 1 (see lib/workers.mjs). It loads the
// peer adapter, says "ready", starts consuming on "start", reports handler starts
// (per job for pickup, as counts every 5 ms otherwise), and on "stop" stops its
// worker, reports how many handlers ran, and exits. It exits too if the parent goes.
import { nowMs } from './lib/clock.mjs';
import { loadSystem } from './systems/index.mjs';

console.log = console.info = console.error; // stdout is reserved

const options = JSON.parse(process.argv[2]);
const perJob = options.scenario === 'pickup';
let adapter = null;
let handle = null;
let handled = 0;
let unsent = 0;
let flushTimer = null;

const fail = (err) => {
  process.send?.({ type: 'error', message: err?.message ?? String(err) });
  setTimeout(() => process.exit(1), 100);
};

const flush = () => {
  flushTimer = null;
  if (unsent > 0) process.send({ type: 'count', delta: unsent });
  unsent = 0;
};

const onJob = (payload) => {
  const at = nowMs();
  handled++;
  if (perJob) {
    process.send({ type: 'job', payload, at });
    return;
  }
  unsent++;
  flushTimer ??= setTimeout(flush, 5);
};

process.on('disconnect', () => process.exit(1));
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
process.on('message', async (msg) => {
  try {
    if (msg.type === 'start') {
      handle = await adapter.startWorker({ onJob, onError: fail });
    } else if (msg.type === 'stop') {
      await handle?.stop();
      if (flushTimer) clearTimeout(flushTimer);
      flush();
      process.send({ type: 'stopped', handled }, () => process.exit(0));
    }
  } catch (err) {
    fail(err);
  }
});

try {
  adapter = await loadSystem(options);
  process.send({ type: 'ready' });
} catch (err) {
  fail(err);
}
