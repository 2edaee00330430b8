/**
 * Scenarios measured from process start, with `jobvisor start` as a child
 * process, from the built package (`dist/`, as in the image) or from the
 * checkout (TypeScript through tsx):
 *
 * - "startup": one job waits; process start → /readyz answers 200 → that job
 *   is done (the database says so).
 * - "cold": N jobs wait (preloaded and analyzed, untimed); process start → the
 *   database confirms all done. What a new pod meets when it joins a backlog.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PACKAGE_ROOT } from '../paths.ts';
import { enqueueMany } from '../queue/enqueue.ts';
import type { BenchDatabase } from './database.ts';
import { BENCH_INFRA } from './harness.ts';
import { waitAllDone } from './process.ts';

export type Entry = 'dist' | 'checkout';
export const ENTRIES: readonly Entry[] = ['dist', 'checkout'];

/** The command each entry runs: the built package's, or the checkout's (TypeScript through tsx). */
export const ENTRY_BIN: Record<Entry, string> = {
  dist: path.join(PACKAGE_ROOT, 'dist/cli/bin.js'),
  checkout: path.join(PACKAGE_ROOT, 'bin/jobvisor.js'),
};
/** The no-op tasks as the built package has them (the checkout's are TypeScript). */
const DIST_TASKS = path.join(PACKAGE_ROOT, 'dist/bench/tasks');

export function entryAvailable(entry: Entry): boolean {
  return entry === 'checkout' || existsSync(ENTRY_BIN.dist);
}

export interface StartupResult {
  readyMs: number;
  firstJobMs: number;
}

export async function startup(
  db: BenchDatabase,
  config: Record<string, unknown>,
  entry: Entry,
): Promise<StartupResult> {
  await enqueueMany(db.pool, [{ kind: 'noop', payload: {} }]);
  const port = await freePort();
  const t0 = performance.now();
  const child = startChild(db.url, config, entry, port);
  try {
    let readyMs = Number.NaN;
    const deadline = Date.now() + 60_000;
    while (Number.isNaN(readyMs)) {
      if (child.exitCode !== null) throw new Error(`jobvisor start (${entry}) exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error(`jobvisor start (${entry}) not ready in 60 s`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) readyMs = performance.now() - t0;
      else await sleep(2);
    }
    return { readyMs, firstJobMs: (await waitAllDone(db, 1, 1)) - t0 };
  } finally {
    await stopChild(child);
  }
}

export async function cold(
  db: BenchDatabase,
  jobs: number,
  config: Record<string, unknown>,
  entry: Entry,
): Promise<{ seconds: number; jobsPerSec: number }> {
  await enqueueMany(
    db.pool,
    Array.from({ length: jobs }, (_, i) => ({ kind: 'noop', payload: { i } })),
  );
  await db.pool.query('ANALYZE jobvisor.jobs');
  const t0 = performance.now();
  const child = startChild(db.url, config, entry, await freePort());
  try {
    const seconds = ((await waitAllDone(db, jobs)) - t0) / 1000;
    return { seconds, jobsPerSec: jobs / seconds };
  } finally {
    await stopChild(child);
  }
}

function startChild(databaseUrl: string, config: Record<string, unknown>, entry: Entry, port: number): ChildProcess {
  const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-bench-'));
  const configFile = path.join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      ...config,
      ...BENCH_INFRA,
      ...(entry === 'dist' ? { tasks: { dir: DIST_TASKS } } : {}),
      metrics: { port, host: '127.0.0.1' },
    }),
  );
  const bin = ENTRY_BIN[entry];
  return spawn(process.execPath, [bin, 'start'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, JOBVISOR_CONFIG: configFile, NODE_ENV: 'bench' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
