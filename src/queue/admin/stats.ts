/** `jobvisor stats`: job counts by queue, kind and status, the oldest due age, live supervisors. */
import { byQueueKindStatus, countActiveJobs, countAllJobs, countRecentlyFinished, type JobCount } from '../stats.ts';
import type { Now, Store } from '../sql.ts';
import { listSupervisors } from './supervisors.ts';
import type { SupervisorRow } from './types.ts';

/** What stats() returns (`jobvisor stats --json`): counts by queue, kind and status, the oldest due age, live supervisors. */
export interface Stats {
  /**
   * Pending, running, failed and blocked jobs, every one; done and cancelled jobs, those
   * that finished in the last hour (`finishedWithin`), or every row kept with `all`.
   */
  counts: Array<{ queue: string; kind: string; status: string; count: number }>;
  /** How far back done and cancelled jobs are counted: '1 hour', or 'all' (every row kept). */
  finishedWithin: '1 hour' | 'all';
  /** Seconds since the oldest due pending job became due; null when none is due. */
  oldestPendingSeconds: number | null;
  supervisors: SupervisorRow[];
}

/**
 * Counts through the partial indexes of live rows plus the last hour's finished
 * rows, so the cost does not grow with the history kept. `all` counts every row
 * kept instead: a scan of the whole table, for an operator's exact figure.
 */
export async function stats(store: Store, now: Now = null, options: { all?: boolean } = {}): Promise<Stats> {
  const rows = options.all ? await countAllJobs(store, now) : await boundedCounts(store, now);
  const supervisors = await listSupervisors(store, now);
  const oldest = rows.reduce<number | null>(
    (max, r) => (r.oldest_due_s === null ? max : Math.max(max ?? 0, r.oldest_due_s)),
    null,
  );
  return {
    counts: rows.map(({ queue, kind, status, count }) => ({ queue, kind, status, count })),
    finishedWithin: options.all ? 'all' : '1 hour',
    oldestPendingSeconds: oldest,
    supervisors,
  };
}

async function boundedCounts(store: Store, now: Now): Promise<JobCount[]> {
  // One after the other: the store may be a single client.
  const active = await countActiveJobs(store, now);
  const finished = await countRecentlyFinished(store, now);
  return [...active, ...finished].sort(byQueueKindStatus);
}
