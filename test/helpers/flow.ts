/**
 * Flow-control measurements from runs recorded inside the task
 * (test/fixtures/tasks/flow_record.js): how many runs overlapped, and how many
 * started in any window.
 */
import type pg from 'pg';

export interface FlowRun {
  job_id: string;
  queue: string;
  key: string | null;
  pid: number;
  started: number;
  /** Null: the run's process was killed before it ended. */
  ended: number | null;
}

export async function createRunsTable(pool: pg.Pool): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS flow_runs (
    run_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, job_id bigint NOT NULL, queue text NOT NULL,
    key text, pid int NOT NULL, started bigint NOT NULL, ended bigint)`);
}

export async function readRuns(pool: pg.Pool, queue: string): Promise<FlowRun[]> {
  const { rows } = await pool.query<{
    job_id: string;
    queue: string;
    key: string | null;
    pid: number;
    started: string;
    ended: string | null;
  }>('SELECT job_id, queue, key, pid, started, ended FROM flow_runs WHERE queue = $1 ORDER BY started', [queue]);
  return rows.map((r) => ({ ...r, started: Number(r.started), ended: r.ended === null ? null : Number(r.ended) }));
}

/** The most runs in progress at one moment (an end at the same ms as a start counts as before it). */
export function maxOverlap(runs: FlowRun[], endOfUnended: number): number {
  const points: Array<[number, number]> = [];
  for (const r of runs) {
    points.push([r.started, 1]);
    points.push([r.ended ?? endOfUnended, -1]);
  }
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of points) {
    now += d;
    max = Math.max(max, now);
  }
  return max;
}

/** maxOverlap per key: key → its most runs at once. */
export function maxOverlapByKey(runs: FlowRun[], endOfUnended: number): Map<string, number> {
  const byKey = new Map<string, FlowRun[]>();
  for (const r of runs) {
    const list = byKey.get(r.key ?? '') ?? [];
    list.push(r);
    byKey.set(r.key ?? '', list);
  }
  return new Map([...byKey].map(([k, list]) => [k, maxOverlap(list, endOfUnended)]));
}

/** The most starts within any half-open window [t, t + windowMs). */
export function maxStartsInWindow(starts: number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[hi] as number) - (sorted[lo] as number) >= windowMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}
