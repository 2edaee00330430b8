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
import type { ThreadLoaded, WorkerSetup } from '../worker/protocol.ts';
import { threadWatch } from './loops/thread_watch.ts';

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * A thread's module in src/worker: compiled (dist/), or, when running from
 * sources, the one of the compiled copy of src/ a test run made
 * (JOBVISOR_TEST_COMPILED, test/helpers/compile.ts), else its tsx bootstrap.
 * The copy's thread registers tsx only when a task needs it, as the package's
 * do (worker/loader.ts), where the bootstrap registers it in every thread:
 * about a second of CPU per test file of in-process supervisors (six
 * integration files: 36.6 s of CPU with the bootstrap, 28.4 s with the copy).
 */
export function threadModule(compiled: string, bootstrap: string): string {
  const file = path.join(here, '../worker', compiled);
  if (existsSync(file)) return file;
  const copy = process.env.JOBVISOR_TEST_COMPILED;
  const copied = copy ? path.join(copy, 'dist/worker', compiled) : '';
  return copied && existsSync(copied) ? copied : path.join(here, '../worker', bootstrap);
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
  const loaded = new Set<number>();
  pool.on('message', (message: Partial<ThreadLoaded> | null) => {
    if (typeof message?.jobvisorThreadLoaded === 'number') loaded.add(message.jobvisorThreadLoaded);
  });
  loadedThreads.set(pool, loaded);
  return pool;
}

/** Per pool, the threads that said their module has loaded (worker/entry.ts). */
const loadedThreads = new WeakMap<Piscina, Set<number>>();

/**
 * Resolves once every live thread of the pool has loaded its module, or after
 * `withinMs`. Node 20 aborts the whole process (a V8 fatal error, "IsGraphAsync
 * must be used on an instantiated module", seen once in CI) when a thread is
 * terminated while its require() instantiates an ES module, which is where a
 * pool's first thread is when a supervisor stops at once (a failed task check,
 * a signal during start-up). So the pool is closed only after this. A thread
 * that never finishes loading (a hung preload) costs `withinMs` and is then
 * terminated as before.
 */
export function threadsLoaded(pool: Piscina, withinMs: number): Promise<void> {
  const loaded = loadedThreads.get(pool);
  if (!loaded) return Promise.resolve();
  return new Promise((resolve) => {
    const settled = () => pool.threads.every((thread) => loaded.has(thread.threadId));
    const finish = () => {
      clearTimeout(timer);
      pool.off('message', check);
      pool.off('workerDestroy', checkLater);
      resolve();
    };
    // Listeners run in order: the one above has recorded the message before this reads it.
    const check = () => {
      if (settled()) finish();
    };
    // A thread that died while loading is gone from pool.threads by the next turn.
    const checkLater = () => setImmediate(check);
    const timer = setTimeout(finish, withinMs);
    pool.on('message', check);
    pool.on('workerDestroy', checkLater);
    check();
  });
}
