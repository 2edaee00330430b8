/**
 * Cleanup: deletes finished jobs past their retention, oldest first, in small
 * batches. SKIP LOCKED and the `jobs_finished_idx` partial index keep it off the
 * rows and index pages that claims use, so it never blocks them.
 */
import { planned, run, type Now, type Store } from './sql.ts';

const DELETE_FINISHED = planned(
  'delete_finished',
  `
WITH gone AS (
  DELETE FROM jobvisor.jobs WHERE id = ANY (ARRAY(
    SELECT id FROM jobvisor.jobs
     WHERE status IN ('done', 'cancelled', 'failed')
       AND finished_at < coalesce($4::timestamptz, now()) - CASE WHEN status = 'failed' THEN $2::float8 ELSE $1::float8 END * interval '1 millisecond'
     ORDER BY finished_at
     LIMIT $3
     FOR UPDATE SKIP LOCKED))
  RETURNING queue, kind, status
)
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
