/**
 * The batch call a job last ran in (task option `batch`), read side: the
 * other jobs of that call, for `jobs show` and the job page.
 *
 * A job's batch_id names the call of its latest attempt (migration 029); the
 * jobs listed are those whose latest attempt ran in the same call (a job of
 * it retried in a later call has moved on to that one). One read through
 * jobs_batch_idx, whose rows are the jobs of batch tasks only; the count is
 * of the call's rows (at most its size), never the table's.
 */
import { planned, run, type Store } from '../sql.ts';
import { checkIds } from './filter.ts';
import type { RelatedJob, RelatedJobs } from './workflow.ts';

/** The jobs of a call: the first `limit` by id, how many there are, and their statuses. */
export interface BatchCallJobs extends RelatedJobs {
  /** The call's id (jobs.batch_id). */
  batchId: string;
}

/** Jobs listed by default: a call holds up to its task's maxSize. */
export const BATCH_LIMIT = 100;

const BATCH_CALL = planned(
  'admin_batch_call',
  `
SELECT j.id::text AS id, j.kind, j.queue, j.status, me.batch_id::text AS batch_id, count(*) OVER ()::int AS total
  FROM (SELECT batch_id FROM jobvisor.jobs WHERE id = $1 AND batch_id IS NOT NULL) AS me
  JOIN jobvisor.jobs AS j ON j.batch_id = me.batch_id
 ORDER BY j.id
 LIMIT $2`,
);

const BATCH_CALL_COUNTS = planned(
  'admin_batch_call_counts',
  `
SELECT j.status, count(*)::int AS count
  FROM (SELECT batch_id FROM jobvisor.jobs WHERE id = $1 AND batch_id IS NOT NULL) AS me
  JOIN jobvisor.jobs AS j ON j.batch_id = me.batch_id
 GROUP BY j.status
 ORDER BY j.status`,
);

/**
 * The call job `id` last ran in, with its jobs (this one included); null for
 * a job that never ran in a batch call (or does not exist).
 * @throws InputError when `id` is not a positive integer.
 */
export async function batchCallOf(store: Store, id: string, limit = BATCH_LIMIT): Promise<BatchCallJobs | null> {
  const [checked] = checkIds([id]);
  const rows = await run<RelatedJob & { batch_id: string; total: number }>(store, BATCH_CALL, [
    checked,
    Math.max(1, Math.floor(limit)),
  ]);
  const first = rows[0];
  if (!first) return null;
  const counts = await run<{ status: string; count: number }>(store, BATCH_CALL_COUNTS, [checked]);
  const byStatus: Record<string, number> = {};
  for (const c of counts) byStatus[c.status] = c.count;
  return {
    batchId: first.batch_id,
    total: first.total,
    byStatus,
    jobs: rows.map(({ id: jobId, kind, queue, status }) => ({ id: jobId, kind, queue, status })),
  };
}
