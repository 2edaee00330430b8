/**
 * How the operator actions respect workflows (migration 017), as clauses of
 * the statements in actions.ts, plus `jobs retry --with-dependents`.
 *
 *   retry    a job with parents goes back to blocked (or pending when they are
 *            all done) instead of straight to pending: reblock() re-counts.
 *   cancel   a cancelled parent settles its dependents like a dead letter:
 *            they are cancelled down the graph, or run anyway.
 *   delete   a parent whose dependents have not finished is refused (they have
 *            yet to read it) unless forced; forced, its blocked dependents are
 *            cancelled. A deleted job takes its edges along, both ways, so a
 *            later retry of a dependent does not wait for it.
 *   retry --with-dependents  also the dependents that were cancelled because
 *            of these jobs (last_error "parent N is …"), all the way down.
 *            Without it they stay cancelled: their edge to the parent is
 *            counted already, so its later success changes nothing for them.
 */
import { DROP_STEPS } from '../drop_steps.ts';
import { intArray, planned, run, type Store } from '../sql.ts';

/** The final SELECT of a retry: re-counts the parents of retried children. */
export const REBLOCK_RETRIED = `s AS (SELECT jobvisor.reblock(array_agg(id) FILTER (WHERE child)) FROM u)
SELECT u.id, u.queue FROM u, s`;

export const SETTLE_CANCELLED = `s AS (SELECT jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents)) FROM u)
SELECT u.id, u.queue FROM u, s`;

export const NO_LIVE_DEPENDENTS = `CASE WHEN j.has_dependents THEN NOT jobvisor.has_live_dependents(j.id) ELSE true END`;

// A deleted job takes its edges both ways: to its parents (as a child) and to
// its dependents (as a parent). An edge left to a deleted parent was counted
// by a later retry of the dependent as a parent not yet done, and nothing
// could ever settle it: the dependent stayed blocked for good.
export const DROP_DELETED_EDGES = `${DROP_STEPS}, edges AS (
  DELETE FROM jobvisor.job_dependencies WHERE child_id = ANY (ARRAY(SELECT id FROM gone WHERE child))
), dependent_edges AS (
  DELETE FROM jobvisor.job_dependencies WHERE parent_id = ANY (ARRAY(SELECT id FROM gone WHERE has_dependents))
), orphans AS (
  UPDATE jobvisor.jobs AS c
     SET status = 'cancelled', finished_at = now(), last_error = 'parent ' || d.parent_id || ' was deleted'
    FROM jobvisor.job_dependencies AS d
   WHERE d.parent_id = ANY (ARRAY(SELECT id FROM gone WHERE has_dependents)) AND c.id = d.child_id
     AND c.status = 'blocked'
  RETURNING c.id, c.has_dependents
), s AS (SELECT jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents)) FROM orphans)
SELECT gone.id, gone.queue FROM gone, s`;

const RETRY_DEPENDENTS = planned(
  'admin_retry_dependents',
  `
WITH RECURSIVE down(id) AS (
  SELECT child_id FROM jobvisor.job_dependencies WHERE parent_id = ANY ($1::bigint[])
  UNION
  SELECT d.child_id FROM jobvisor.job_dependencies AS d JOIN down ON d.parent_id = down.id
), u AS (
  UPDATE jobvisor.jobs AS j
     SET status = 'blocked', attempts = 0, snoozes = 0, run_at = now(), finished_at = NULL, locked_until = NULL
   WHERE j.id = ANY (ARRAY(SELECT id FROM down)) AND j.status = 'cancelled' AND j.last_error LIKE 'parent % is %'
  RETURNING j.id
)
SELECT array_agg(id ORDER BY id)::text[] AS ids, jobvisor.reblock(array_agg(id)) AS released FROM u`,
);

/**
 * Brings back the dependents of `ids` that were cancelled because a parent
 * failed or was cancelled: blocked again (pending when their parents are all
 * done). Call it after retrying `ids` themselves.
 * @returns the ids brought back.
 */
export async function retryDependents(store: Store, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const [row] = await run<{ ids: string[] | null }>(store, RETRY_DEPENDENTS, [intArray(ids)]);
  return row?.ids ?? [];
}
