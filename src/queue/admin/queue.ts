/**
 * One queue, for the dashboard's queue page: whether it is paused, its counts
 * (the overview's, read the same way), each live supervisor's settings for it,
 * and how much of its limits is in use now.
 *
 * Shape: the limit reads go through the indexes the claim uses for the same
 * facts: running jobs per key through jobs_running_key_idx (queue,
 * concurrency_key), recent starts through rate_starts_age_idx (queue,
 * started_at). Both read only rows that hold a slot, so they cost what the
 * limits allow (a few hundred rows), never the backlog.
 */
import { planned, run, type Now, type Store } from '../sql.ts';
import { overview, type QueueOverview } from './overview.ts';
import type { QueueConfig } from '../presence.ts';
import type { SupervisorRow } from './types.ts';

/** Keys shown per limit, busiest first. */
export const TOP_KEYS = 10;

export interface QueueDetail {
  queue: string;
  paused: boolean;
  counts: Omit<QueueOverview, 'queue' | 'paused'>;
  /** The live supervisors whose configuration has this queue, each with its settings for it. */
  supervisors: Array<{ supervisor: SupervisorRow; config: QueueConfig | { concurrency: number } }>;
  /** Running jobs per concurrency key (the busiest TOP_KEYS). */
  runningByKey: Array<{ key: string; running: number }>;
  /** Starts within the longest rate-limit period any supervisor has for this queue ('' = queue-wide). */
  recentStarts: Array<{ key: string; starts: number }>;
  /** That period, in ms; null when no supervisor has a rate limit for this queue. */
  ratePeriodMs: number | null;
  /** Some counts are lower bounds (see overview). */
  capped: boolean;
}

const RUNNING_BY_KEY = planned(
  'admin_queue_running_by_key',
  `
SELECT concurrency_key AS key, count(*)::int AS running
  FROM jobvisor.jobs
 WHERE status = 'running' AND queue = $1 AND concurrency_key IS NOT NULL
 GROUP BY concurrency_key
 ORDER BY running DESC, key
 LIMIT $2`,
);

const RECENT_STARTS = planned(
  'admin_queue_recent_starts',
  `
SELECT key, count(*)::int AS starts
  FROM jobvisor.rate_starts
 WHERE queue = $1 AND started_at > coalesce($3::timestamptz, now()) - $2::float8 * interval '1 millisecond'
 GROUP BY key
 ORDER BY starts DESC, key
 LIMIT $4`,
);

/** The supervisors serving `queue`, with the settings each reported for it. Pure. */
export function servingSupervisors(supervisors: SupervisorRow[], queue: string): QueueDetail['supervisors'] {
  return supervisors
    .filter((s) => Object.hasOwn(s.queues ?? {}, queue))
    .map((s) => ({ supervisor: s, config: s.queue_config?.[queue] ?? { concurrency: s.queues[queue] ?? 0 } }));
}

/** The queues of `names` that no live supervisor has in its configuration. Pure. */
export function unservedQueues(names: string[], supervisors: SupervisorRow[]): Set<string> {
  return new Set(names.filter((q) => servingSupervisors(supervisors, q).length === 0));
}

/** Everything the queue page shows about `queue` (a queue nobody used yet reads as empty). */
export async function queueDetail(store: Store, queue: string, now: Now = null): Promise<QueueDetail> {
  const o = await overview(store, now);
  const row = o.queues.find((q) => q.queue === queue);
  const supervisors = servingSupervisors(o.supervisors, queue);
  const periods = supervisors.flatMap((s) =>
    'rateLimit' in s.config && s.config.rateLimit ? [s.config.rateLimit.periodMs] : [],
  );
  const ratePeriodMs = periods.length > 0 ? Math.max(...periods) : null;
  const runningByKey = await run<{ key: string; running: number }>(store, RUNNING_BY_KEY, [queue, TOP_KEYS]);
  const recentStarts =
    ratePeriodMs === null
      ? []
      : await run<{ key: string; starts: number }>(store, RECENT_STARTS, [queue, ratePeriodMs, now, TOP_KEYS]);
  return {
    queue,
    paused: row?.paused ?? false,
    counts: {
      pending: row?.pending ?? 0,
      due: row?.due ?? 0,
      running: row?.running ?? 0,
      dead: row?.dead ?? 0,
      doneLastHour: row?.doneLastHour ?? 0,
      blocked: row?.blocked ?? 0,
    },
    supervisors,
    runningByKey,
    recentStarts,
    ratePeriodMs,
    capped: o.capped,
  };
}
