/**
 * What a queue's `concurrency` really allows. A queue runs at most
 * `pool.maxThreads × jobsPerThread` jobs at once, so a `concurrency` above that
 * would be silently cut. Unset, `jobsPerThread` is derived so that
 * `concurrency` fits in the threads (I/O-style sharing); set, a limit it cannot
 * reach is reported in one line naming the effective limit and the key to change.
 */
import { QUEUE_DEFAULTS, type QueueInput, type QueueSettings } from './schema.ts';
import { parseDuration } from '../duration.ts';

export interface QueueLimits {
  /** Each queue with every value resolved (jobsPerThread derived where unset). */
  queues: Record<string, QueueSettings>;
  /** Jobs each queue can really run at once in one supervisor. */
  limits: Record<string, number>;
  /** One line per queue whose `concurrency` cannot be reached. */
  warnings: string[];
}

/**
 * Jobs claimed ahead when a queue does not say: 40 per place of `concurrency`,
 * at most 2,000, for queues whose jobs share threads (I/O-style); none for a
 * queue whose jobs each own a thread (CPU-bound: long jobs claimed ahead would
 * only wait here while another supervisor could run them). Measured on 2
 * cores, concurrency 50, 20,000-job bursts: prefetch 0 gave 4,000-4,800 jobs/s,
 * 500 gave 22,000, 1,000 gave 39,500-49,000 and 2,000 gave 43,700-58,000
 * (BENCHMARKS.md). The price: a supervisor holds up to that many due jobs that
 * another supervisor cannot take until they start here (slow jobs: set it lower).
 */
export function defaultPrefetch(concurrency: number, jobsPerThread: number): number {
  return jobsPerThread > 1 ? Math.min(2000, 40 * concurrency) : 0;
}

/** Pure: resolves queue defaults and derives `jobsPerThread`; reports what cannot be reached. */
export function effectiveQueueLimits(settings: {
  pool: { maxThreads: number };
  queues: Record<string, QueueInput>;
}): QueueLimits {
  const threads = settings.pool.maxThreads;
  const queues: Record<string, QueueSettings> = {};
  const limits: Record<string, number> = {};
  const warnings: string[] = [];
  for (const [name, given] of Object.entries(settings.queues)) {
    const concurrency = given.concurrency ?? QUEUE_DEFAULTS.concurrency;
    const jobsPerThread = given.jobsPerThread ?? Math.ceil(concurrency / threads);
    const timeout = given.timeout ?? QUEUE_DEFAULTS.timeout;
    queues[name] = {
      concurrency,
      jobsPerThread,
      prefetch: given.prefetch ?? defaultPrefetch(concurrency, jobsPerThread),
      timeout: timeout === null ? null : parseDuration(timeout),
    };
    const limit = Math.min(concurrency, threads * jobsPerThread);
    limits[name] = limit;
    if (limit < concurrency) {
      warnings.push(
        `queues.${name}.concurrency is ${concurrency}, but at most ${limit} of its jobs run at once ` +
          `(pool.maxThreads ${threads} × queues.${name}.jobsPerThread ${jobsPerThread}): ` +
          `raise queues.${name}.jobsPerThread to ${Math.ceil(concurrency / threads)} (or remove it), or raise pool.maxThreads`,
      );
    }
  }
  return { queues, limits, warnings };
}
