/**
 * The Piscina pool. One Piscina task is one session (see worker/protocol.ts),
 * so `concurrentTasksPerWorker` stays 1 and the dispatcher, not Piscina, decides
 * which queue gets a free thread. resourceLimits bound each thread's heap: a task
 * above them kills only its thread, which Piscina replaces.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { tracingStarted } from '../tracing/sdk.ts';
import type { WorkerSetup } from '../worker/protocol.ts';
import { threadWatch } from './loops/thread_watch.ts';

const here = path.dirname(fileURLToPath(import.meta.url));

/** A thread's module in src/worker: compiled (dist/), or its tsx bootstrap when running from sources. */
export function threadModule(compiled: string, bootstrap: string): string {
  const file = path.join(here, '../worker', compiled);
  return existsSync(file) ? file : path.join(here, '../worker', bootstrap);
}

/** The worker entry. With `traced`, the one that starts the OpenTelemetry SDK in the thread first. */
export function workerFilename(traced = false): string {
  return traced ? threadModule('traced_entry.js', 'tsx_traced_entry.mjs') : threadModule('entry.js', 'tsx_entry.mjs');
}

export function createThreadPool(options: {
  maxThreads: number;
  idleTimeoutMs: number;
  maxOldGenerationSizeMb: number;
  maxYoungGenerationSizeMb: number;
  stackSizeMb: number;
  setup: WorkerSetup;
}): Piscina {
  const resourceLimits: Record<string, number> = {};
  if (options.maxOldGenerationSizeMb > 0) resourceLimits.maxOldGenerationSizeMb = options.maxOldGenerationSizeMb;
  if (options.maxYoungGenerationSizeMb > 0) resourceLimits.maxYoungGenerationSizeMb = options.maxYoungGenerationSizeMb;
  if (options.stackSizeMb > 0) resourceLimits.stackSizeMb = options.stackSizeMb;
  // Threads start their own SDK when this process started one (jobvisor start).
  const traced = tracingStarted();
  const pool = new Piscina({
    filename: workerFilename(traced),
    minThreads: 1,
    maxThreads: options.maxThreads,
    idleTimeout: options.idleTimeoutMs,
    concurrentTasksPerWorker: 1,
    // Tasks keep timers and sockets (ctx.db) alive between jobs: never block a
    // thread's event loop in Atomics.wait.
    atomics: 'disabled',
    resourceLimits,
    workerData: options.setup,
    // A thread's stdout is forwarded by the main thread; task logs write fd 1 directly.
  });
  // Terminated threads that do not die are counted (jobvisor_threads_stuck) and waited for on exit.
  threadWatch.watch(pool);
  return pool;
}
