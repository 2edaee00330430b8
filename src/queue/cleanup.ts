/**
 * Cleanup: deletes finished jobs past their retention, oldest first, in
 * batches. The `jobs_finished_idx` partial index keeps it off the rows and
 * index pages that claims use, so it never blocks them.
 *
 * Shape, and why:
 * - The batch is the first `limit` entries of `jobs_finished_idx` below the
 *   later of the two cut-offs, in index order: `finished_at < now - least(retentions)` is
 *   the index condition, so the walk starts at the oldest row and stops at the
 *   first row still kept. (With only the per-status cut-off, which reads
 *   `status` from the row, the walk had no index condition and went on through
 *   every kept row whenever a batch came back short.) The per-status cut-off
 *   filters the rows the walk passes: dead letters are usually kept longer.
 * - It runs as an index walk whatever the statistics say (`planned(…, 'indexWalk')`:
 *   no sort, no bitmap, no sequential scan). On a table never analyzed,
 *   PostgreSQL estimated 625 of 500,000 expired rows, read all of them through
 *   a bitmap and sorted them on disk to keep 1,000: 314 ms a batch, and the
 *   backlog went at about 2,000 rows/s.
 * - The rows are deleted by `ctid`, as the walk found them (a TID scan, no
 *   second walk of the primary key), and not locked first; the delete checks
 *   status and age again. A row updated between the walk and the delete (a
 *   dead letter re-queued) is rechecked in its newer version, which fails
 *   that check, so the job stays (the TID alone is not rechecked before
 *   PostgreSQL 17). A row locked by another transaction (another supervisor's
 *   batch) is waited for, then skipped when it is gone. Against the earlier
 *   `id = ANY(… FOR UPDATE SKIP LOCKED)`, on a 500,000-row backlog, batches of
 *   5,000: 12-20 ms a batch instead of 20-40, and 174 bytes of WAL per row
 *   instead of 236 (full-page images are most of both; the lock wrote a
 *   record per row of its own).
 * - A condition on a row's other tables goes in the walk's WHERE as a
 *   correlated `NOT EXISTS (… WHERE x.parent_id = j.id … OFFSET 0)` over an
 *   indexed column: `OFFSET 0` keeps it a subplan probed per walked row, so
 *   the walk keeps its order (2 buffer hits a row, 5,000 rows in 10 ms).
 *   Without it PostgreSQL made an anti join whose inner side read every
 *   unfinished job through the primary key.
 */
import { DROP_STEPS } from './drop_steps.ts';
import { planned, run, type Now, type Store } from './sql.ts';

// Workflows (migrations 017, 023): a parent stays while any dependent of it
// is kept, whatever the dependent's status: a dead-lettered or cancelled
// dependent can be retried and then reads the parent's result again
// (ctx.parents()). A deleted child takes its edges along, so the parent goes
// at the first round after its last dependent went. Plain rows have
// has_dependents and parents_waiting NULL, so for them neither clause reads
// job_dependencies. CASE: has_kept_dependents is called only for flagged rows,
// one probe of job_dependencies_parent_idx each, so the walk keeps its index
// order. The DELETE checks it again on the row it deletes: an enqueue whose
// COMMIT flagged the parent while this statement waited for its lock made a
// newer version, which PostgreSQL re-checks against these conditions, and the
// function (VOLATILE) sees that enqueue's committed edge there.
const KEEP_READ_PARENTS = `AND CASE WHEN j.has_dependents THEN NOT jobvisor.has_kept_dependents(j.id) ELSE true END`;
/** The same, on the DELETE's own row (alias `d`). */
const STILL_KEEP_READ_PARENTS = `AND CASE WHEN d.has_dependents THEN NOT jobvisor.has_kept_dependents(d.id) ELSE true END`;
// A deleted parent takes its edges along as well. Its dependents are all gone
// by then (they kept it), but their edges to it may not be: a done child
// deleted by its keep-none completion leaves them, so that statement, the
// hottest with cleanup.retention 0, never opens job_dependencies (measured:
// +0.5 ms per batch of 1,000 plain jobs on the loaded test machine, for a
// DELETE that found nothing). With retention 0 they go at the next round.
const DROP_EDGES = `edges AS (
  DELETE FROM jobvisor.job_dependencies WHERE child_id = ANY (ARRAY(SELECT id FROM gone WHERE child))
), parent_edges AS (
  DELETE FROM jobvisor.job_dependencies WHERE parent_id = ANY (ARRAY(SELECT id FROM gone WHERE parent))
)`;

const DELETE_FINISHED = planned(
  'delete_finished',
  `
WITH gone AS (
  DELETE FROM jobvisor.jobs AS d
   WHERE d.ctid = ANY (ARRAY(
           SELECT j.ctid FROM jobvisor.jobs AS j
            WHERE j.status IN ('done', 'cancelled', 'failed')
              AND j.finished_at < coalesce($4::timestamptz, now()) - least($1::float8, $2::float8) * interval '1 millisecond'
              AND j.finished_at < coalesce($4::timestamptz, now())
                                  - CASE WHEN j.status = 'failed' THEN $2::float8 ELSE $1::float8 END * interval '1 millisecond'
              ${KEEP_READ_PARENTS}
            ORDER BY j.finished_at
            LIMIT $3))
     AND d.status IN ('done', 'cancelled', 'failed')
     AND d.finished_at < coalesce($4::timestamptz, now())
                         - CASE WHEN d.status = 'failed' THEN $2::float8 ELSE $1::float8 END * interval '1 millisecond'
     ${STILL_KEEP_READ_PARENTS}
  RETURNING d.id, d.queue, d.kind, d.status, d.parents_waiting IS NOT NULL AS child, d.has_dependents IS TRUE AS parent, d.has_steps
), ${DROP_EDGES}, ${DROP_STEPS}
SELECT queue, kind, status, count(*)::int AS count FROM gone GROUP BY 1, 2, 3`,
  'indexWalk',
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
