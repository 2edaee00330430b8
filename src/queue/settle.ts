/**
 * The safety net of workflows: the release and cascade happen in a parent's
 * own done or dead-letter write (settle_parents, migration 017), but a parent
 * finished by a path that does not call it (a plain-SQL `UPDATE … SET status =
 * 'done'`, an edge inserted by hand after its parent finished) would leave its
 * children blocked. The reaper's round settles those: edges not yet counted
 * whose parent has finished, and edges whose parent no longer exists (deleted
 * by plain SQL, or left by a version whose `jobs delete` kept them): their
 * children are cancelled like the children of a cancelled parent
 * (settle_missing_parents, migration 023). Reads only the partial index of
 * uncounted edges, so a database without workflows reads one empty index page.
 */
import { planned, run, type Store } from './sql.ts';

// LEFT JOIN LATERAL: an edge whose parent row is gone has no status, and is
// taken too. Both functions are STRICT: an empty FILTER gives NULL and skips it.
const SETTLE_STRAGGLERS = planned(
  'settle_stragglers',
  `
SELECT coalesce(jobvisor.settle_parents(array_agg(DISTINCT parent_id) FILTER (WHERE found)), 0)
     + coalesce(jobvisor.settle_missing_parents(array_agg(DISTINCT parent_id) FILTER (WHERE NOT found)), 0) AS released
  FROM (SELECT d.parent_id, p.status IS NOT NULL AS found FROM jobvisor.job_dependencies AS d
          LEFT JOIN LATERAL (SELECT status FROM jobvisor.jobs WHERE id = d.parent_id LIMIT 1) AS p ON true
         WHERE NOT d.counted AND (p.status IS NULL OR p.status IN ('done', 'failed', 'cancelled'))
         LIMIT $1) AS s`,
);

/** Settles up to `limit` edges whose parent finished without settling them, or is gone; returns the children released. */
export async function settleStragglers(store: Store, limit: number): Promise<number> {
  const [row] = await run<{ released: number }>(store, SETTLE_STRAGGLERS, [limit]);
  return row?.released ?? 0;
}
