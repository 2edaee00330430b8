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
      prefetch: given.prefetch ?? QUEUE_DEFAULTS.prefetch,
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
