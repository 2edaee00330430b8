/**
 * Dead letters grouped by kind and by the first line of their error, for the
 * Dead letters page: after fixing a bug, retry the whole group with
 * `retryJobs(db, { filter: { status: 'failed', kind, errorPrefix } })`.
 *
 * Reads only failed rows (jobs_failed_idx): its cost follows the number of
 * dead letters, not the table's size.
 */
import { planned, run, type Store } from '../sql.ts';
import { ERROR_PREFIX_SQL } from './filter.ts';

/** Dead letters (status failed) of one kind with the same first line of error, as deadLetterGroups counts them. */
export interface DeadLetterGroup {
  kind: string;
  /** First line of last_error (at most 200 characters); '' when there is none. */
  errorPrefix: string;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
}

const DEAD_LETTER_GROUPS = planned(
  'admin_dead_letter_groups',
  `
SELECT kind, ${ERROR_PREFIX_SQL} AS "errorPrefix", count(*)::int AS count,
       min(coalesce(finished_at, created_at)) AS "firstSeen", max(coalesce(finished_at, created_at)) AS "lastSeen"
  FROM jobvisor.jobs
 WHERE status = 'failed'
 GROUP BY 1, 2
 ORDER BY count DESC, kind, 2
 LIMIT $1`,
);

/** The largest groups of dead letters first (at most `limit`, default 100). */
export async function deadLetterGroups(store: Store, options: { limit?: number } = {}): Promise<DeadLetterGroup[]> {
  const limit = Math.max(1, Math.floor(options.limit ?? 100));
  return run<DeadLetterGroup>(store, DEAD_LETTER_GROUPS, [limit]);
}
