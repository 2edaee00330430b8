/**
 * Workflow test helpers. The engine's tests: wf_runs is written by the wf_step
 * fixture (fixtures/tasks/wf_step.js) from inside each run; wf_release lets a
 * held run finish. The read-side tests build workflows in plain SQL
 * (insertWorkflow below): jobs in any status and their edges in
 * jobvisor.job_dependencies, one statement per table, so a graph of thousands
 * of nodes is two round trips and its statuses need no runs.
 */
import type pg from 'pg';

export const WF_TABLES = `
  CREATE TABLE wf_runs (run serial PRIMARY KEY, job_id bigint, started timestamptz DEFAULT clock_timestamp(), ended timestamptz, parents jsonb);
  CREATE TABLE wf_release (job_id bigint PRIMARY KEY);`;

export interface JobRow {
  id: string;
  status: string;
  parents_waiting: number | null;
  last_error: string | null;
  finished_at: Date | null;
  result: unknown;
}

export async function jobRow(pool: pg.Pool, id: string): Promise<JobRow> {
  const { rows } = await pool.query<JobRow>(
    'SELECT id, status, parents_waiting, last_error, finished_at, result FROM jobvisor.jobs WHERE id = $1',
    [id],
  );
  return rows[0] as JobRow;
}

export async function runsOf(pool: pg.Pool, id: string): Promise<Array<{ started: Date; parents: unknown[] }>> {
  return (await pool.query('SELECT started, parents FROM wf_runs WHERE job_id = $1 ORDER BY run', [id])).rows;
}

/** Makes job `id` running under `owner` with lease token `token`, as a claim would. */
export async function markRunning(pool: pg.Pool, id: string, owner: string, token: string): Promise<void> {
  await pool.query(
    `UPDATE jobvisor.jobs SET status = 'running', locked_by = $2, lease_token = $3, attempts = attempts + 1,
            locked_until = now() + interval '1 minute', started_at = now() WHERE id = $1`,
    [id, owner, token],
  );
}

export interface WorkflowNode {
  kind: string;
  /** Default: 'blocked' when the node has parents, else 'pending'. */
  status?: string;
  queue?: string;
  payload?: unknown;
  /** Indexes of earlier nodes of the same call. */
  parents?: number[];
}

/**
 * Inserts `nodes` and their edges; returns the new ids, in the order of `nodes`.
 * @throws when a parent index is not an earlier node (the contract's no-cycle rule).
 */
export async function insertWorkflow(pool: pg.Pool, nodes: WorkflowNode[]): Promise<string[]> {
  nodes.forEach((n, i) => {
    for (const p of n.parents ?? [])
      if (!Number.isInteger(p) || p < 0 || p >= i) throw new Error(`node ${i}: parent ${p} is not an earlier node`);
  });
  const { rows } = await pool.query<{ id: string; ord: number }>(
    `INSERT INTO jobvisor.jobs (kind, queue, status, payload, finished_at)
     SELECT k, q, s, p, CASE WHEN s IN ('done', 'failed', 'cancelled') THEN now() END
       FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[]) WITH ORDINALITY AS t(k, q, s, p, ord)
      ORDER BY ord
     RETURNING id`,
    [
      nodes.map((n) => n.kind),
      nodes.map((n) => n.queue ?? 'default'),
      nodes.map((n) => n.status ?? ((n.parents ?? []).length > 0 ? 'blocked' : 'pending')),
      nodes.map((n) => JSON.stringify(n.payload ?? {})),
    ],
  );
  // Identity values follow the insertion order of one statement.
  const ids = rows.map((r) => r.id).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
  const child: string[] = [];
  const parent: string[] = [];
  nodes.forEach((n, i) => {
    for (const p of n.parents ?? []) {
      child.push(ids[i] as string);
      parent.push(ids[p] as string);
    }
  });
  if (child.length > 0)
    await pool.query(
      `INSERT INTO jobvisor.job_dependencies (child_id, parent_id) SELECT * FROM unnest($1::bigint[], $2::bigint[])`,
      [child, parent],
    );
  return ids;
}

/** `n` parents (status `parentStatus`) → one fan-in job → one last job: the nodes for insertWorkflow. */
export function fanIn(n: number, parentStatus = 'done'): WorkflowNode[] {
  const parents = Array.from({ length: n }, (_, i) => ({ kind: 'render_page', status: parentStatus, payload: { i } }));
  const all = parents.map((_, i) => i);
  return [...parents, { kind: 'merge_pdf', parents: all }, { kind: 'email_pdf', parents: [n] }];
}
