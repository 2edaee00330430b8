/** `jobvisor stats`: job counts by queue, kind and status, the oldest due age, live supervisors. */
import { countAllJobs } from '../stats.ts';
import type { Now, Store } from '../sql.ts';
import { listSupervisors } from './supervisors.ts';
import type { SupervisorRow } from './types.ts';

export interface Stats {
  counts: Array<{ queue: string; kind: string; status: string; count: number }>;
  /** Seconds since the oldest due pending job became due; null when none is due. */
  oldestPendingSeconds: number | null;
  supervisors: SupervisorRow[];
}

/** Counts scan the whole table: for the CLI, not for a page refreshed every few seconds (use overview). */
export async function stats(store: Store, now: Now = null): Promise<Stats> {
  const rows = await countAllJobs(store, now);
  const supervisors = await listSupervisors(store, now);
  const oldest = rows.reduce<number | null>(
    (max, r) => (r.oldest_due_s === null ? max : Math.max(max ?? 0, r.oldest_due_s)),
    null,
  );
  return {
    counts: rows.map(({ queue, kind, status, count }) => ({ queue, kind, status, count })),
    oldestPendingSeconds: oldest,
    supervisors,
  };
}
