// The worker side of a run: in this process when --processes is 1, otherwise P
// child processes (worker.mjs, same Node binary) that load the peer library, report
// "ready", and start consuming only when told, so module loading is never timed.
//
// States: prepared → started → stopped. Callbacks:
//   onJob(payload, startedAtMs)  a handler started (in a child: sent over IPC); in this
//                                process its return value is the handler's (a promise or not)
//   onCount(delta)               handlers started, possibly batched (children send
//                                counts at most every 5 ms unless per-job reports are on)
//   onError(err)                 a worker failed; the run is lost
import { fork } from 'node:child_process';
import { nowMs } from './clock.mjs';

const CHILD = new URL('../worker.mjs', import.meta.url);

export async function prepareWorkers(options, adapter, callbacks) {
  return options.processes === 1 && !options.children ? inProcess(adapter, callbacks) : inChildren(options, callbacks);
}

function inProcess(adapter, { onJob, onCount, onError }) {
  let handle = null;
  let handled = 0;
  return {
    async start() {
      handle = await adapter.startWorker({
        onJob: (payload) => {
          const at = nowMs();
          handled++;
          const handler = onJob?.(payload, at); // in-process, onJob may return the handler's promise (perkey)
          onCount?.(1);
          return handler;
        },
        onError,
      });
    },
    async stop() {
      await handle?.stop();
      return { handled };
    },
  };
}

async function inChildren(options, { onJob, onCount, onError }) {
  const children = [];
  const ready = [];
  const stopped = [];
  let stopping = false;
  for (let i = 0; i < options.processes; i++) {
    const child = fork(CHILD, [JSON.stringify({ ...options, workerIndex: i })], {
      stdio: ['ignore', 2, 2, 'ipc'], // a child's stdout must never reach ours
      serialization: 'advanced',
    });
    let resolveReady, rejectReady, resolveStopped;
    ready.push(new Promise((res, rej) => ((resolveReady = res), (rejectReady = rej))));
    stopped.push(new Promise((res) => (resolveStopped = res)));
    child.on('message', (msg) => {
      if (msg.type === 'ready') resolveReady();
      else if (msg.type === 'job') {
        onJob?.(msg.payload, msg.at);
        onCount?.(1);
      } else if (msg.type === 'count') onCount?.(msg.delta);
      else if (msg.type === 'stopped') resolveStopped(msg.handled);
      else if (msg.type === 'error') {
        const err = new Error(`worker process ${i}: ${msg.message}`);
        rejectReady(err);
        onError(err);
      }
    });
    child.on('exit', (code, signal) => {
      resolveStopped(0);
      if (!stopping) {
        const err = new Error(`worker process ${i} exited early (${signal ?? `code ${code}`})`);
        rejectReady(err);
        onError(err);
      }
    });
    children.push(child);
  }
  await Promise.all(ready);

  return {
    async start() {
      for (const child of children) child.send({ type: 'start' });
    },
    async stop() {
      stopping = true;
      for (const child of children) if (child.connected) child.send({ type: 'stop' });
      const killer = setTimeout(() => children.forEach((child) => child.kill('SIGKILL')), 20_000);
      const counts = await Promise.all(stopped);
      clearTimeout(killer);
      return { handled: counts.reduce((a, b) => a + b, 0) };
    },
    kill() {
      stopping = true;
      for (const child of children) child.kill('SIGKILL');
    },
  };
}
