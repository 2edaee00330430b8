/**
 * What a workflow job reads of its parents (ctx.parents()): one statement that
 * returns one JSON array, so 10,000 parents are one row and one JSON.parse in
 * the task's thread, not 10,000 row objects built by pg. A parent deleted by
 * hand (`jobs delete --force`) is not listed.
 */
import type { Db } from './sql.ts';
import { prepared, run } from './sql.ts';

export interface ParentJob {
  id: string;
  kind: string;
  /** `done`, or `failed`/`cancelled` for a job that runs anyway (onParentFailure 'run'), or a re-queued parent's current status. */
  status: string;
  /** The parent's return value (null when it returned nothing). */
  result: unknown;
}

const LIST_PARENTS = prepared(
  'list_parents',
  `
SELECT coalesce(json_agg(json_build_object('id', p.id::text, 'kind', p.kind, 'status', p.status, 'result', p.result)
                         ORDER BY p.id), '[]')::text AS parents
  FROM jobvisor.job_dependencies AS d JOIN jobvisor.jobs AS p ON p.id = d.parent_id
 WHERE d.child_id = $1::bigint`,
);

/** The parents of job `id`, in id order (empty for a job without parents). */
export async function listParents(db: Db, schema: string, id: string): Promise<ParentJob[]> {
  const [row] = await run<{ parents: string }>({ db, schema }, LIST_PARENTS, [id]);
  return JSON.parse(row?.parents ?? '[]') as ParentJob[];
}
