/**
 * The history scenario's database (history.ts): the finished rows of a depth,
 * added as jobs live them; the backlog and the work of the last depth reset;
 * the day's rollup; the CHECKPOINT before each depth; blocks read so far.
 */
import type { Store } from '../queue/sql.ts';
import { rollUpRound } from '../supervisor/loops/maintenance.ts';
import type { BenchDatabase } from './database.ts';
import { BENCH_QUEUE } from './harness.ts';

const CHUNK = 500_000;
/** Pending jobs of the bench queue at each depth: what the claims and the reads meet. */
export const BACKLOG = 20_000;
const HISTORY_OWNER = 'history';

/**
 * Adds `rows` done jobs of the default queue that finished over the last 3
 * days, oldest id first. Each chunk lives the life a job does, as three
 * statements: inserted pending, claimed (running, the claim's columns set),
 * done. So the pages hold what a supervisor leaves on them: the done
 * versions beside the dead pending and running ones, which VACUUM then
 * frees. Inserting the rows as done instead packed each page to the
 * fillfactor with a few hundred bytes over, just enough for one more small
 * row: a burst's 20,000 inserts then went one to a page, each a page image
 * after the checkpoint (5,000 bytes of WAL per job instead of 1,000), which
 * no supervisor's table looks like.
 */
export async function addHistory(db: BenchDatabase, rows: number): Promise<void> {
  for (let from = 0; from < rows; from += CHUNK) {
    const { rows: range } = await db.pool.query<{ lo: string; hi: string }>(
      `WITH added AS (
         INSERT INTO jobvisor.jobs (kind, payload, run_at, created_at)
         SELECT 'noop', jsonb_build_object('i', g), f - interval '2 s', f - interval '2 s'
           FROM (SELECT g, now() - (1 - g::float8 / $2::int) * interval '3 days' AS f
                   FROM generate_series($1::int + 1, $1::int + $3::int) AS g) AS s
         RETURNING id)
       SELECT min(id) AS lo, max(id) AS hi FROM added`,
      [from, rows, Math.min(CHUNK, rows - from)],
    );
    const { lo, hi } = range[0] as { lo: string; hi: string };
    await db.pool.query(
      `UPDATE jobvisor.jobs
          SET status = 'running', attempts = 1, lease_token = nextval('jobvisor.lease_token_seq'),
              locked_by = $3, locked_until = created_at + interval '1 min', started_at = created_at + interval '1 s'
        WHERE id BETWEEN $1 AND $2`,
      [lo, hi, HISTORY_OWNER],
    );
    await db.pool.query(
      `UPDATE jobvisor.jobs SET status = 'done', locked_until = NULL, finished_at = created_at + interval '2 s', result = NULL
        WHERE id BETWEEN $1 AND $2`,
      [lo, hi],
    );
    // What autovacuum does while a history builds up over days (a chunk leaves a million dead
    // row versions, past its threshold): without it, the dead entries of every chunk stayed in
    // jobs_pending_idx and jobs_running_idx, 30,313 pages of pending index for 20,000 live
    // entries at 5 M, and the planner priced the pending count by that size.
    await db.pool.query('VACUUM jobvisor.jobs');
  }
}

/** Leaves the history and a fresh backlog: what the last depth's claims and bursts wrote is deleted. */
export async function resetWork(db: BenchDatabase): Promise<void> {
  await db.pool.query('DELETE FROM jobvisor.jobs WHERE locked_by IS DISTINCT FROM $1', [HISTORY_OWNER]);
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (queue, kind, payload) SELECT $1, 'noop', jsonb_build_object('i', g) FROM generate_series(1, $2::int) AS g`,
    [BENCH_QUEUE, BACKLOG],
  );
  await db.pool.query('VACUUM ANALYZE jobvisor.jobs');
}

/**
 * Counts the last day of the history into finished_minutes with the rollup a
 * supervisor's cleanup runs, and returns how long it took in seconds. The
 * history arrives with past finish times, behind the watermark the previous
 * depth's rollup moved, so the watermark goes back a day first (the minutes
 * counted before go too): the state a supervisor would have left.
 */
export async function rollUpDay(db: BenchDatabase): Promise<number> {
  const store: Store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query('DELETE FROM jobvisor.finished_minutes');
  await db.pool.query(
    `UPDATE jobvisor.finished_rollup SET upto = date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00') - interval '1 day'`,
  );
  const t0 = performance.now();
  const state = await rollUpRound(store, Number.POSITIVE_INFINITY);
  if (state !== 'done') throw new Error(`the rollup did not catch up (${state})`);
  return (performance.now() - t0) / 1000;
}

/** CHECKPOINT, or a clear error when the benchmark's role may not (superuser or pg_checkpoint). */
export async function checkpoint(db: BenchDatabase): Promise<void> {
  try {
    await db.pool.query('CHECKPOINT');
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err;
    throw new Error(
      'the history scenario runs CHECKPOINT before each depth, so every depth starts with nothing left to write: ' +
        "connect as a superuser or a role granted pg_checkpoint (PostgreSQL 15's GRANT pg_checkpoint TO …)",
      { cause: err },
    );
  }
}

/** Blocks this database read from outside shared buffers (the OS cache or the disk), so far. */
export async function blocksRead(db: BenchDatabase): Promise<number> {
  const { rows } = await db.pool.query<{ n: string }>(
    'SELECT blks_read AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0]?.n ?? 0);
}
