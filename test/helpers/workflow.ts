/**
 * Tables and reads for workflow tests: wf_runs is written by the wf_step
 * fixture (fixtures/tasks/wf_step.js) from inside each run; wf_release lets a
 * held run finish.
 */
import type pg from 'pg';

export const WF_TABLES = `
  CREATE TABLE wf_runs (run serial PRIMARY KEY, job_id bigint, started timestamptz DEFAULT clock_timestamp(), parents jsonb);
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
