/**
 * Counts for `jobvisor stats` and the database gauges.
 *
 * `countActiveJobs` reads only pending, running and failed rows through their
 * partial indexes: cheap however many done rows the table keeps. `countAllJobs`
 * scans the table and is for the CLI only.
 */
import { planned, prepared, run, type Now, type Store } from './sql.ts';

export interface JobCount {
  queue: string;
  kind: string;
  status: string;
  count: number;
  /** Seconds since the oldest due pending job became due (pending rows only). */
  oldest_due_s: number | null;
}

const COUNT_ACTIVE = planned(
  'count_active',
  `
SELECT queue, kind, status, count(*)::int AS count,
       extract(epoch FROM coalesce($1::timestamptz, now())
               - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= coalesce($1::timestamptz, now()))) AS oldest_due_s
  FROM jobvisor.jobs
 WHERE status = 'pending' OR status = 'running' OR status = 'failed'
 GROUP BY 1, 2, 3
 ORDER BY 1, 2, 3`,
);

const COUNT_ALL = prepared(
  'count_all',
  `
SELECT queue, kind, status, count(*)::int AS count,
       extract(epoch FROM coalesce($1::timestamptz, now())
               - min(run_at) FILTER (WHERE status = 'pending' AND run_at <= coalesce($1::timestamptz, now()))) AS oldest_due_s
  FROM jobvisor.jobs
 GROUP BY 1, 2, 3
 ORDER BY 1, 2, 3`,
);

function numbers(rows: JobCount[]): JobCount[] {
  return rows.map((r) => ({ ...r, oldest_due_s: r.oldest_due_s === null ? null : Number(r.oldest_due_s) }));
}

export async function countActiveJobs(store: Store, now: Now = null): Promise<JobCount[]> {
  return numbers(await run<JobCount>(store, COUNT_ACTIVE, [now]));
}

export async function countAllJobs(store: Store, now: Now = null): Promise<JobCount[]> {
  return numbers(await run<JobCount>(store, COUNT_ALL, [now]));
}
