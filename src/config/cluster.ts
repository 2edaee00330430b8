/**
 * The `cluster` configuration section (`jobvisor start --processes N`): how
 * many supervisor processes one primary runs, and when a child is recycled.
 * `processes` is 1 (one process, no primary: today's `jobvisor start`), an
 * integer from 2, or `auto` (resolved at start from the CPUs this process may
 * use: src/cluster/cpus.ts).
 */
import convict from 'convict';
import { intIn } from './validate.ts';

/** Largest `cluster.processes`: more children than this is a typo, not a machine. */
export const MAX_PROCESSES = 256;

/** The convict format of `cluster.processes`: an integer from 1, or "auto"; digits from the environment. */
export const PROCESS_COUNT = 'jobvisor-process-count';
convict.addFormat({
  name: PROCESS_COUNT,
  validate: (value: unknown) => {
    if (value === 'auto') return;
    if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_PROCESSES)
      throw new Error(`must be "auto" or an integer from 1 to ${MAX_PROCESSES}, got ${JSON.stringify(value)}`);
  },
  coerce: (v: unknown) => (typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v),
});

export const clusterSchema = {
  processes: {
    doc: 'Supervisor processes `jobvisor start` runs under one primary: 1 (no primary), N, or "auto" (one per CPU available, cgroup quota included).',
    format: PROCESS_COUNT,
    default: 1 as number | 'auto',
    env: 'JOBVISOR_PROCESSES',
  },
  maxRssMb: {
    doc: 'A child whose resident memory exceeds this many MB is replaced and drained (0: never).',
    format: intIn(0, 1_048_576),
    default: 0,
    env: 'JOBVISOR_CLUSTER_MAX_RSS_MB',
  },
  maxJobs: {
    doc: 'A child that has finished this many jobs is replaced and drained (0: never).',
    format: intIn(0, 1_000_000_000),
    default: 0,
    env: 'JOBVISOR_CLUSTER_MAX_JOBS',
  },
};
