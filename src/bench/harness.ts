/**
 * Shared pieces of the benchmark scenarios: settings for a bench supervisor,
 * an in-process supervisor that counts completions, and supervisors as child
 * processes for multi-process runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Settings } from '../config/index.ts';
import { PACKAGE_ROOT } from '../paths.ts';
import { createLogger } from '../log.ts';
import { Supervisor } from '../supervisor/supervisor.ts';

export const BENCH_TASKS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'tasks');
export const BENCH_QUEUE = 'bench';

export interface QueueShape {
  concurrency: number;
  jobsPerThread: number;
  prefetch: number;
  threads: number;
}

export function benchConfig(shape: QueueShape): Record<string, unknown> {
  return {
    tasks: { dir: BENCH_TASKS_DIR },
    pool: { maxThreads: shape.threads },
    queues: {
      [BENCH_QUEUE]: { concurrency: shape.concurrency, jobsPerThread: shape.jobsPerThread, prefetch: shape.prefetch },
    },
    metrics: { port: 0, host: '127.0.0.1' },
    log: { level: 'warn' },
    cleanup: { interval: '1h' },
    schedules: [],
  };
}

export function benchSettings(shape: QueueShape, overrides: Record<string, unknown> = {}): Settings {
  return loadConfig({ env: {}, overrides: { ...benchConfig(shape), ...overrides } });
}

/** The settings a bench adds to a user's configuration: the no-op tasks, a free metrics port, quiet logs. */
export const BENCH_INFRA = {
  tasks: { dir: BENCH_TASKS_DIR },
  metrics: { port: 0, host: '127.0.0.1' },
  log: { level: 'warn' },
  schedules: [],
};

/** An in-process supervisor with a user's configuration (queues, pool) plus BENCH_INFRA. */
export function configuredSupervisor(databaseUrl: string, config: Record<string, unknown>): Supervisor {
  const settings = loadConfig({ env: {}, overrides: { ...config, ...BENCH_INFRA } });
  return new Supervisor({ settings, databaseUrl, log: createLogger({ level: 'warn', fd: 2 }) });
}

/**
 * Counts the jobs a supervisor reports through `event` (runs started, or
 * outcomes written); `reached(n)` resolves once the count is at least n.
 */
export function jobCounter(supervisor: Supervisor, event: 'job:started' | 'job:completed') {
  let count = 0;
  let waiter: { target: number; resolve: () => void } | undefined;
  supervisor.events.on(event, ({ jobs }: { jobs: readonly unknown[] }) => {
    count += jobs.length;
    if (waiter && count >= waiter.target) {
      waiter.resolve();
      waiter = undefined;
    }
  });
  return {
    get count(): number {
      return count;
    },
    reached: (target: number): Promise<void> =>
      new Promise((resolve) => {
        if (count >= target) resolve();
        else waiter = { target, resolve };
      }),
  };
}

/** An in-process supervisor (`overrides` replace top-level keys); `completions(n)` resolves when n more jobs are done. */
export function inProcessSupervisor(databaseUrl: string, shape: QueueShape, overrides?: Record<string, unknown>) {
  const settings = benchSettings(shape, overrides);
  const supervisor = new Supervisor({ settings, databaseUrl, log: createLogger({ level: 'warn', fd: 2 }) });
  const done = jobCounter(supervisor, 'job:completed');
  return { supervisor, completions: (n: number): Promise<void> => done.reached(done.count + n) };
}

/** `jobvisor start` as a child process; resolves once it logged `ready`. */
export async function childSupervisor(
  databaseUrl: string,
  shape: QueueShape,
): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-bench-'));
  const configFile = path.join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ ...benchConfig(shape), log: { level: 'info' } }));
  const child = spawn(process.execPath, [path.join(PACKAGE_ROOT, 'bin/jobvisor.js'), 'start'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, JOBVISOR_CONFIG: configFile, NODE_ENV: 'bench' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error('bench supervisor did not become ready in 60 s')), 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      if (buffer.includes('"msg":"ready"')) {
        clearTimeout(timer);
        resolve();
      }
      if (buffer.length > 100_000) buffer = buffer.slice(-1000);
    });
    child.on('exit', (code) => reject(new Error(`bench supervisor exited with ${code}`)));
  });
  child.stdout?.resume();
  return {
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export function noopJobs(n: number, kind = 'noop') {
  return Array.from({ length: n }, (_, i) => ({ kind, queue: BENCH_QUEUE, payload: { i } }));
}
