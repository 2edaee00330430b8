/**
 * Cleanup: deletes finished jobs past their retention, oldest first, in small
 * batches. SKIP LOCKED and the `jobs_finished_idx` partial index keep it off the
 * rows and index pages that claims use, so it never blocks them.
 */
import { planned, run, type Now, type Store } from './sql.ts';

// Workflows (migration 017): a parent stays while a dependent has not
// finished (it has yet to read the parent's result), and a deleted child takes
// its edges along. Plain rows have has_dependents and parents_waiting NULL,
// so for them neither clause reads job_dependencies.
// CASE: has_live_dependents (migration 017) is called only for flagged rows.
const KEEP_READ_PARENTS = `AND CASE WHEN has_dependents THEN NOT jobvisor.has_live_dependents(id) ELSE true END`;
const DROP_EDGES = `edges AS (
  DELETE FROM jobvisor.job_dependencies WHERE child_id = ANY (ARRAY(SELECT id FROM gone WHERE child))
)`;

const DELETE_FINISHED = planned(
  'delete_finished',
  `
WITH gone AS (
  DELETE FROM jobvisor.jobs WHERE id = ANY (ARRAY(
    SELECT id FROM jobvisor.jobs
     WHERE status IN ('done', 'cancelled', 'failed')
       AND finished_at < coalesce($4::timestamptz, now()) - CASE WHEN status = 'failed' THEN $2::float8 ELSE $1::float8 END * interval '1 millisecond'
       ${KEEP_READ_PARENTS}
     ORDER BY finished_at
     LIMIT $3
     FOR UPDATE SKIP LOCKED))
  RETURNING id, queue, kind, status, parents_waiting IS NOT NULL AS child
), ${DROP_EDGES}
SELECT queue, kind, status, count(*)::int AS count FROM gone GROUP BY 1, 2, 3`,
);

export interface Cleaned {
  queue: string;
  kind: string;
  status: string;
  count: number;
}

/**
 * Deletes up to `limit` finished jobs: done/cancelled older than `retentionMs`,
 * failed older than `failedRetentionMs`. Returns counts by queue, kind and status.
 */
export async function deleteOldJobs(
  store: Store,
  args: { retentionMs: number; failedRetentionMs: number; limit: number; now?: Now },
): Promise<Cleaned[]> {
  return run<Cleaned>(store, DELETE_FINISHED, [args.retentionMs, args.failedRetentionMs, args.limit, args.now ?? null]);
}
