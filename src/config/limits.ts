/**
 * What a queue's `concurrency` really allows. A queue runs at most
 * `pool.maxThreads × jobsPerThread` jobs at once, so a `concurrency` above that
 * would be silently cut. Unset, `jobsPerThread` is `concurrency`: a queue's jobs
 * share one thread (I/O-style; one Node thread serves many awaits), and a task
 * that keeps a core busy says so itself (`exclusiveThread`) and gets a thread of
 * its own wherever it is queued. Set, a limit it cannot reach is reported in one
 * line naming the effective limit and the key to change.
 *
 * Why one thread and not `concurrency ÷ maxThreads`: on 2 cores, 50 no-op jobs
 * spread over two threads (25 each) ran a 20,000-job burst at 38,000-41,000
 * jobs/s with 330 ms of supervisor CPU; on one thread at 45,000-46,000 with
 * 230 ms (interleaved runs, BENCHMARKS.md). Two threads each get half-size
 * batches, so every job costs more messages and wake-ups, and the second core
 * is taken from PostgreSQL.
 */
import { QUEUE_DEFAULTS, type QueueInput, type QueueSettings } from './schema.ts';
import { claimsAhead, type RateLimit, type RateLimitInput } from './sections.ts';
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

/** A rate limit with its period in ms (loaded settings already have it so). */
function rateLimitOf(rate: RateLimitInput | RateLimit): RateLimit {
  const periodMs = 'periodMs' in rate ? rate.periodMs : parseDuration(rate.period);
  return { count: rate.count, periodMs, perKey: rate.perKey ?? false };
}

/** Pure: resolves queue defaults (`jobsPerThread` unset: `concurrency`); reports what cannot be reached. */
export function effectiveQueueLimits(settings: {
  pool: { maxThreads: number };
  queues: Record<string, QueueInput | QueueSettings>;
}): QueueLimits {
  const threads = settings.pool.maxThreads;
  const queues: Record<string, QueueSettings> = {};
  const limits: Record<string, number> = {};
  const warnings: string[] = [];
  for (const [name, given] of Object.entries(settings.queues)) {
    const concurrency = given.concurrency ?? QUEUE_DEFAULTS.concurrency;
    const jobsPerThread = given.jobsPerThread ?? concurrency;
    const timeout = given.timeout ?? QUEUE_DEFAULTS.timeout;
    const resolved: QueueSettings = {
      concurrency,
      jobsPerThread,
      prefetch: 0,
      timeout: timeout === null ? null : parseDuration(timeout),
    };
    // Limits appear only when set, so an unlimited queue's settings are what they always were.
    if (given.globalConcurrency != null) resolved.globalConcurrency = given.globalConcurrency;
    if (given.perKeyConcurrency != null) resolved.perKeyConcurrency = given.perKeyConcurrency;
    if (given.rateLimit != null) resolved.rateLimit = rateLimitOf(given.rateLimit);
    if (given.keyWeights != null) resolved.keyWeights = { ...given.keyWeights };
    // A queue limited queue-wide claims only what it can start now: a job claimed
    // ahead would hold a cluster-wide slot (or a rate-limit start) while it waits
    // here. One limited per key alone claims ahead, by time (claim/ahead.ts).
    resolved.prefetch = claimsAhead(resolved) ? (given.prefetch ?? defaultPrefetch(concurrency, jobsPerThread)) : 0;
    queues[name] = resolved;
    const limit = Math.min(concurrency, threads * jobsPerThread);
    limits[name] = limit;
    if (limit < concurrency) {
      warnings.push(
        `queues.${name}.concurrency is ${concurrency}, but at most ${limit} of its jobs run at once ` +
          `(pool.maxThreads ${threads} × queues.${name}.jobsPerThread ${jobsPerThread}): ` +
          `raise queues.${name}.jobsPerThread to ${Math.ceil(concurrency / threads)} (or remove it), or raise pool.maxThreads`,
      );
    }
    const global = resolved.globalConcurrency;
    if (global !== undefined && global < limit) {
      warnings.push(
        `queues.${name}.concurrency is ${concurrency}, but queues.${name}.globalConcurrency lets at most ${global} ` +
          `of its jobs run at once across all supervisors, this one included: lower concurrency to ${global}, ` +
          `or raise globalConcurrency`,
      );
    }
  }
  return { queues, limits, warnings };
}

/** Connections one supervisor opens at most, per pool (pools open them lazily, up to these). */
export interface ConnectionBudget {
  /** The supervisor's pool: claims, outcomes, heartbeats, reaper, cleanup, gauges (database.poolSize). */
  pool: number;
  /** LISTEN, on database.directUrl when set. */
  listener: number;
  /** /readyz's probe. */
  readiness: number;
  /** ctx.db of the tasks: pool.maxThreads × pool.dbPoolSize. */
  tasks: number;
  total: number;
}

export function connectionBudget(settings: {
  database: { poolSize: number };
  pool: { maxThreads: number; dbPoolSize: number };
}): ConnectionBudget {
  const budget = {
    pool: settings.database.poolSize,
    listener: 1,
    readiness: 1,
    tasks: settings.pool.maxThreads * settings.pool.dbPoolSize,
  };
  return { ...budget, total: budget.pool + budget.listener + budget.readiness + budget.tasks };
}
