/**
 * How many supervisor processes `cluster.processes: "auto"` means: one per CPU
 * this process may use. `os.availableParallelism()` counts the CPUs of the
 * affinity mask; a container's CPU limit is a CFS quota instead
 * (/sys/fs/cgroup/cpu.max, "max 100000" or "200000 100000"), which the
 * scheduler enforces without hiding CPUs. The smaller of the two wins; a
 * fractional quota rounds up (1.5 CPUs: 2 processes), never below 1.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export const CGROUP_CPU_MAX = '/sys/fs/cgroup/cpu.max';

/** CPUs allowed by a cgroup v2 `cpu.max` text; undefined when unlimited or unreadable. Pure. */
export function quotaCpus(text: string | undefined): number | undefined {
  const [quota, period] = (text ?? '').trim().split(/\s+/);
  if (!quota || quota === 'max') return undefined;
  const q = Number(quota);
  const p = Number(period ?? '100000');
  if (!Number.isFinite(q) || !Number.isFinite(p) || q <= 0 || p <= 0) return undefined;
  return Math.max(1, Math.ceil(q / p));
}

function readCpuMax(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The CPUs this process may use: affinity bounded by the cgroup quota. */
export function availableCpus(file = CGROUP_CPU_MAX): number {
  const quota = quotaCpus(readCpuMax(file));
  return Math.max(1, Math.min(availableParallelism(), quota ?? Infinity));
}

/** `cluster.processes` as a count. */
export function resolveProcesses(value: number | 'auto', cpus: () => number = availableCpus): number {
  return value === 'auto' ? cpus() : value;
}
