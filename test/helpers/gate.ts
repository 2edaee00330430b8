/**
 * The tables of the gate fixtures (fixtures/tasks/gate.js, gate_report.js): a
 * run records itself in gate_runs, then waits until gate_actions names its run
 * and how to end. Tests create the tables, read the runs and tell a run.
 */
import type pg from 'pg';

export const GATE_TABLES = `
  CREATE TABLE gate_runs (run serial PRIMARY KEY, job_id bigint, attempt int, started timestamptz DEFAULT clock_timestamp(), ended timestamptz, how text);
  CREATE TABLE gate_actions (run int PRIMARY KEY, action text);`;

/** The runs of a job so far, oldest first. */
export async function gateRunsOf(pool: pg.Pool, id: string) {
  return (await pool.query('SELECT * FROM gate_runs WHERE job_id = $1 ORDER BY run', [id])).rows;
}

/** Tells one run how to end ('done', 'fail' or 'snooze', as its fixture reads them). */
export async function tellGate(pool: pg.Pool, run: number, action: 'done' | 'fail' | 'snooze'): Promise<void> {
  await pool.query('INSERT INTO gate_actions (run, action) VALUES ($1, $2)', [run, action]);
}
