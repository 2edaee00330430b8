/**
 * A child process whose clock is off by a fixed amount, through Debian's
 * libfaketime (the library the `faketime` program preloads). The tests preload
 * it themselves rather than run `faketime -f … node …`: that program forks and
 * waits, so a SIGKILL meant for the supervisor would leave it running.
 *
 * Checked on Node 20 (see skewSeen): Date.now() and performance.timeOrigin +
 * performance.now() move by the offset together, on the main thread and in
 * worker threads alike; timers keep real durations.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { FAKETIME, findTool, skipUnless } from './tools.ts';

/** libfaketime as Debian installs it (/usr/lib/<multiarch>/faketime/), or null. */
export function libfaketime(): string | null {
  const roots = ['/usr/lib', '/usr/lib64'];
  for (const root of roots) {
    const dirs = [path.join(root, 'faketime')];
    try {
      for (const d of readdirSync(root)) dirs.push(path.join(root, d, 'faketime'));
    } catch {
      continue;
    }
    for (const dir of dirs) {
      // The multi-threaded build: a supervisor reads the clock from many threads.
      const file = path.join(dir, 'libfaketimeMT.so.1');
      if (existsSync(file)) return file;
    }
  }
  return null;
}

/** For `describe(..., { skip })`: false when faketime and its library are there. */
export function skipUnlessFaketime(): false | string {
  const missing = skipUnless(FAKETIME);
  if (missing) return missing;
  return libfaketime() ? false : 'libfaketime is not where Debian installs it';
}

/** The environment that sets a child's clock `offsetMs` off (e.g. -20000: 20 s behind). */
export function skewedEnv(offsetMs: number): Record<string, string> {
  const lib = libfaketime();
  if (!lib || !findTool(FAKETIME)) throw new Error('faketime is not installed');
  const seconds = offsetMs / 1000;
  return { LD_PRELOAD: lib, FAKETIME: `${seconds >= 0 ? '+' : ''}${seconds}s`, FAKETIME_DONT_FAKE_MONOTONIC: '0' };
}

/**
 * What a child under skewedEnv(offsetMs) sees, against this process's clock:
 * the skew of Date.now() and of performance's clock, in its main thread and in a
 * worker thread (each less this process's own reading, so within a pipe's delay).
 */
export interface SkewSeen {
  mainDate: number;
  mainPerf: number;
  workerDate: number;
  workerPerf: number;
}

export async function skewSeen(offsetMs: number): Promise<SkewSeen> {
  const script = `
    const { Worker } = require('node:worker_threads');
    const read = () => ({ date: Date.now(), perf: performance.timeOrigin + performance.now() });
    const w = new Worker("require('node:worker_threads').parentPort.postMessage(" +
      "{ date: Date.now(), perf: performance.timeOrigin + performance.now() })", { eval: true });
    w.once('message', (worker) => { console.log(JSON.stringify({ main: read(), worker })); w.terminate(); });`;
  const child = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, ...skewedEnv(offsetMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  await new Promise((resolve) => child.once('exit', resolve));
  const now = Date.now();
  const seen = JSON.parse(out) as Record<'main' | 'worker', { date: number; perf: number }>;
  return {
    mainDate: seen.main.date - now,
    mainPerf: seen.main.perf - now,
    workerDate: seen.worker.date - now,
    workerPerf: seen.worker.perf - now,
  };
}
