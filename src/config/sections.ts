/**
 * The two sections of the configuration that are lists or maps of entries
 * (queues by name, schedules) rather than fixed keys: their shapes, as files
 * give them and as they come out of loading, and the one set of queue defaults.
 */

export interface QueueSettings {
  /** Jobs of this queue running at once in one supervisor. */
  concurrency: number;
  /** How many of this queue's jobs may share one worker thread (1 = CPU-bound: a thread each). */
  jobsPerThread: number;
  /** Extra jobs claimed ahead into a local buffer (0 = claim only what can start now). */
  prefetch: number;
  /** Per-queue timeout override in ms (null = jobs.timeout). */
  timeout: number | null;
  /** Jobs of this queue running at once across all supervisors (absent: no limit). */
  globalConcurrency?: number;
  /** Jobs with the same concurrency key running at once across all supervisors (absent: no limit). */
  perKeyConcurrency?: number;
  /** At most `count` starts in any window of `periodMs`, across all supervisors (absent: no limit). */
  rateLimit?: RateLimit;
  /**
   * Per-key claims: each key's share of the slots, by key (`"*"`: every key
   * not named; absent: 1). Needs perKeyConcurrency or rateLimit.perKey.
   */
  keyWeights?: Record<string, number>;
}

export interface RateLimit {
  count: number;
  periodMs: number;
  /** One window per concurrency key instead of one for the queue. */
  perKey: boolean;
}

/** A queue as a file gives it: any key may be missing; durations are still text. */
export type QueueInput = Partial<
  Omit<QueueSettings, 'timeout' | 'rateLimit' | 'globalConcurrency' | 'perKeyConcurrency' | 'keyWeights'>
> & {
  keyWeights?: Record<string, number> | null;
  timeout?: string | number | null;
  globalConcurrency?: number | null;
  perKeyConcurrency?: number | null;
  rateLimit?: RateLimitInput | RateLimit | null;
};

/** A rate limit as a file gives it (period still text). */
export interface RateLimitInput {
  count: number;
  period: string | number;
  perKey?: boolean;
}

/** Whether any flow-control limit applies to the queue (it then claims with its own statement). */
export function isLimited(q: QueueSettings): boolean {
  return q.globalConcurrency !== undefined || q.perKeyConcurrency !== undefined || q.rateLimit !== undefined;
}

/**
 * Whether the queue may claim jobs ahead of its places (`prefetch`): unlimited
 * queues, and queues limited per key alone (a job claimed ahead holds only its
 * own key's slot). Not with globalConcurrency or a rate limit: it would hold a
 * cluster-wide slot, or a start, while it waits in one supervisor's buffer.
 */
export function claimsAhead(q: Omit<QueueSettings, 'prefetch'>): boolean {
  return q.globalConcurrency === undefined && q.rateLimit === undefined;
}

/**
 * The one set of queue defaults, for `default` and every other queue.
 * `jobsPerThread` and `prefetch` have none: unset, they are derived from
 * `concurrency` (see limits.ts).
 */
export const QUEUE_DEFAULTS = { concurrency: 10, timeout: null } as const;

/**
 * A cron schedule as configured (`schedules[]`): every fire time enqueues one
 * job of `kind` with `payload` on `queue`, once across all supervisors.
 */
export interface Schedule {
  name: string;
  cron: string;
  kind: string;
  payload: Record<string, unknown>;
  queue: string;
  priority: number;
  timezone: string | null;
}

export type ScheduleInput = Partial<Schedule> & Pick<Schedule, 'name' | 'cron' | 'kind'>;
