/**
 * How idle the machine's CPUs have been lately, for the test scheduler
 * (schedule.ts): /proc/stat's `cpu` line (every core, every process: the test
 * files, the processes they spawn and the PostgreSQL server alike) sampled
 * every SAMPLE_MS, idle and I/O-wait time over all time, over a window.
 * Undefined off Linux, where nothing reads it.
 */
import { readFileSync } from 'node:fs';

const SAMPLE_MS = 500;

interface Sample {
  atMs: number;
  idle: number;
  total: number;
}

/** The `cpu` line's idle + iowait and total jiffies, or undefined without /proc. */
export function readCpu(): Omit<Sample, 'atMs'> | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const [, ...fields] = line.trim().split(/\s+/);
    const n = fields.slice(0, 8).map(Number);
    if (n.length < 5 || n.some((x) => !Number.isFinite(x))) return undefined;
    return { idle: (n[3] ?? 0) + (n[4] ?? 0), total: n.reduce((a, b) => a + b, 0) };
  } catch {
    return undefined;
  }
}

/** The busy share of every core between two readCpu() readings (0–1), or undefined. */
export function busyBetween(a: ReturnType<typeof readCpu>, b: ReturnType<typeof readCpu>): number | undefined {
  if (!a || !b || b.total === a.total) return undefined;
  return 1 - (b.idle - a.idle) / (b.total - a.total);
}

export interface CpuIdle {
  /** The idle share of every core over the last `windowMs` (0–1), or undefined before a window's worth of samples. */
  idleOver(windowMs: number): number | undefined;
  stop(): void;
}

/** Starts sampling; stop() ends it. Keeps a minute of samples. */
export function watchCpuIdle(now: () => number = () => performance.now()): CpuIdle {
  const samples: Sample[] = [];
  const take = (): void => {
    const s = readCpu();
    if (!s) return;
    samples.push({ atMs: now(), ...s });
    while (samples.length > 120) samples.shift();
  };
  take();
  const timer = setInterval(take, SAMPLE_MS);
  timer.unref();
  return {
    idleOver(windowMs) {
      const last = samples.at(-1);
      if (!last) return undefined;
      const first = samples.findLast((s) => last.atMs - s.atMs >= windowMs);
      if (!first || last.total === first.total) return undefined;
      return (last.idle - first.idle) / (last.total - first.total);
    },
    stop() {
      clearInterval(timer);
    },
  };
}
