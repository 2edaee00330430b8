/**
 * The insert of validated jobs, and the id each caller gets back.
 *
 * A job skipped as a duplicate (its kind and uniqueKey are held by a job that
 * exists) reports that job's id. `ON CONFLICT DO NOTHING` returns nothing for
 * it, so the id is read by a second statement, FIND_UNIQUE. Reading it in the
 * same statement (a CTE beside the insert) would miss the commonest duplicate
 * of all, two requests enqueueing the same key at once: under READ COMMITTED
 * the insert waits for the other transaction and sees its row conflict, but a
 * SELECT of the same statement keeps the snapshot taken before that commit and
 * finds nothing. The second statement takes a new snapshot and sees it. (Under
 * REPEATABLE READ a conflict with a row the snapshot cannot see is a
 * serialization failure, 40001, raised by PostgreSQL to the caller.)
 *
 * Between the two statements the holder can be deleted (cleanup of old
 * finished jobs, `jobs delete`): the key is free again, so those jobs are
 * inserted again, as a call a moment later would be. A key that still cannot
 * be read after MAX_ROUNDS (rows hidden from this role by row-level security)
 * is an error rather than a result without an id.
 */
import { JobvisorError } from '../errors.ts';
import type { EnqueueResult } from './enqueue_types.ts';
import { planned, run, type Store } from './sql.ts';
import { jobColumns, type JobRow } from './job_row.ts';
import { insertGraph } from './workflow.ts';

/** Insert rounds before a duplicate whose holder keeps vanishing (or cannot be read) is an error. */
const MAX_ROUNDS = 3;

// One statement for one job or many: arrays through unnest, so a batch is one
// round trip and one NOTIFY. NULLs take the column defaults.
const INSERT_JOBS = planned(
  'insert_jobs',
  `
INSERT INTO jobvisor.jobs (queue, kind, payload, priority, max_attempts, run_at, unique_key, trace_context, concurrency_key)
SELECT j.queue, j.kind, j.payload, j.priority, coalesce(j.max_attempts, 8),
       coalesce(j.run_at, now() + coalesce(j.delay_ms, 0) * interval '1 millisecond'), j.unique_key, $9::jsonb,
       j.concurrency_key
  FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::int[], $5::int[], $6::timestamptz[], $7::float8[], $8::text[],
              $10::text[])
       AS j(queue, kind, payload, priority, max_attempts, run_at, delay_ms, unique_key, concurrency_key)
ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
RETURNING id, kind, unique_key`,
);

const FIND_UNIQUE = planned(
  'find_unique',
  `
SELECT id, kind, unique_key FROM jobvisor.jobs j
 WHERE (kind, unique_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
   AND unique_key IS NOT NULL`,
);

/**
 * Inserts `rows` (plain ones by INSERT_JOBS, a batch with parents by
 * insertGraph) and gives each its result, in order.
 * `traceContext`: the caller's active span (see tracing/context.ts), the same for every row.
 * @throws JobvisorError (code DUPLICATE_UNREADABLE) when a duplicate's holder could not be read in MAX_ROUNDS.
 */
export async function insertJobs(store: Store, rows: JobRow[], traceContext: string | null): Promise<EnqueueResult[]> {
  const results = new Array<EnqueueResult | undefined>(rows.length);
  let todo = rows.map((_, i) => i);
  for (let round = 1; todo.length > 0; round++) {
    if (round > MAX_ROUNDS) {
      const r = rows[todo[0] as number] as JobRow;
      throw new JobvisorError(
        'DUPLICATE_UNREADABLE',
        `a ${r.kind} job with unique key ${JSON.stringify(r.uniqueKey)} exists but could not be read (deleted again and again, or hidden from this role)`,
      );
    }
    // A job retried after its holder vanished names its parents by id: the
    // jobs it named by index were inserted in the first round (a parent by
    // index has no uniqueKey, so it is never a duplicate).
    const batch = todo.map((i) => (round === 1 ? (rows[i] as JobRow) : byIds(rows[i] as JobRow, results)));
    const ids = await insertOnce(store, batch, traceContext);
    const holders = await holdersOf(store, batch, ids);
    const next: number[] = [];
    todo.forEach((index, k) => {
      const id = ids[k];
      if (id !== null && id !== undefined) results[index] = { id, duplicate: false };
      else {
        const holder = holders.get(keyOf(batch[k] as JobRow));
        if (holder === undefined) next.push(index);
        else results[index] = { id: holder, duplicate: true };
      }
    });
    todo = next;
  }
  return results as EnqueueResult[];
}

/** Each row's new id, in order; null where the row was skipped as a duplicate. */
async function insertOnce(store: Store, rows: JobRow[], traceContext: string | null): Promise<Array<string | null>> {
  if (rows.some((r) => r.parentIds.length + r.parentIndexes.length > 0)) return insertGraph(store, rows, traceContext);
  const inserted = await run<{ id: string; kind: string; unique_key: string | null }>(
    store,
    INSERT_JOBS,
    jobColumns(rows, traceContext),
  );
  // Rows come back in insertion order: plain rows by position, keyed rows by
  // key. The same key twice in one batch: the first is inserted, the second is
  // skipped (it conflicts with the first).
  const byKey = new Map<string, string>();
  const plain: string[] = [];
  for (const r of inserted) {
    if (r.unique_key === null) plain.push(r.id);
    else byKey.set(keyOf({ kind: r.kind, uniqueKey: r.unique_key }), r.id);
  }
  let next = 0;
  return rows.map((r) => {
    if (r.uniqueKey === null) return plain[next++] ?? null;
    const key = keyOf(r);
    const id = byKey.get(key) ?? null;
    byKey.delete(key);
    return id;
  });
}

/** The ids of the jobs holding the keys of the skipped rows: jobs of this batch, else read by FIND_UNIQUE. */
async function holdersOf(store: Store, rows: JobRow[], ids: Array<string | null>): Promise<Map<string, string>> {
  const holders = new Map<string, string>();
  rows.forEach((r, i) => {
    const id = ids[i];
    if (r.uniqueKey !== null && id !== null && id !== undefined) holders.set(keyOf(r), id);
  });
  const missing = rows.filter((r, i) => ids[i] === null && r.uniqueKey !== null && !holders.has(keyOf(r)));
  if (missing.length === 0) return holders;
  const found = await run<{ id: string; kind: string; unique_key: string }>(store, FIND_UNIQUE, [
    missing.map((r) => r.kind),
    missing.map((r) => r.uniqueKey),
  ]);
  for (const r of found) holders.set(keyOf({ kind: r.kind, uniqueKey: r.unique_key }), r.id);
  return holders;
}

/** A row to insert again: its parents named by index become ids (results of the first round). */
function byIds(row: JobRow, results: Array<EnqueueResult | undefined>): JobRow {
  if (row.parentIndexes.length === 0) return row;
  const ids = new Set(row.parentIds);
  for (const n of row.parentIndexes) ids.add((results[n] as EnqueueResult).id);
  return { ...row, parentIds: [...ids], parentIndexes: [] };
}

function keyOf(r: { kind: string; uniqueKey: string | null }): string {
  return `${r.kind}\u0000${r.uniqueKey ?? ''}`;
}
