/**
 * Enqueueing jobs that wait for other jobs (workflows). A job with `dependsOn`
 * is inserted `blocked` with `parents_waiting` = its parents not yet done, and
 * one job_dependencies row per parent; parents get `has_dependents`, so their
 * done or dead-letter write settles their children (settle_parents, migration
 * 017). Plain batches never come here.
 *
 * Race with a parent's completion: the statement only reads its existing
 * parents and names them in jobvisor.new_edges; at the COMMIT of the caller's
 * transaction a deferred trigger (settle_new_edges, migration 023) takes them
 * FOR NO KEY UPDATE, flags them and settles the edges of those that finished
 * meanwhile. So a parent's row is locked for the milliseconds of that commit,
 * never for as long as an application keeps its transaction open: nothing a
 * supervisor does to a running parent (its heartbeat, its done write) waits
 * on an application. The migration says why no completion slips between.
 *
 * Cycles cannot be written: a job names existing ids, or earlier jobs of the
 * same call by index. A missing parent makes the whole statement write
 * nothing; the caller gets an InputError naming it. A parent deleted after
 * the statement and before the COMMIT fails the COMMIT (SQLSTATE 23503): in
 * the caller's transaction that is the caller's COMMIT; on a pool, where the
 * statement commits by itself, it is this InputError again.
 */
import { InputError } from '../errors.ts';
import { shown } from './validate.ts';
import { RESERVE_IDS } from './copy.ts';
import { jobColumns, type JobRow } from './job_row.ts';
import { intArray, planned, run, type Store } from './sql.ts';

/** Larger than any bigint id: PostgreSQL would reject it with an error that aborts the transaction. */
const MAX_ID = 9_223_372_036_854_775_807n;

/**
 * Checks `dependsOn` of the job at `index` (null: a single enqueue, where
 * `{ index }` is not allowed) and `onParentFailure`.
 * @throws InputError naming the bad entry.
 */
export function checkDependencies(
  dependsOn: unknown,
  onParentFailure: unknown,
  index: number | null,
): Pick<JobRow, 'parentIds' | 'parentIndexes' | 'onParentFailure'> {
  if (onParentFailure !== undefined && onParentFailure !== 'cancel' && onParentFailure !== 'run')
    throw new InputError(`onParentFailure must be 'cancel' or 'run', got ${shown(onParentFailure)}`);
  if (dependsOn === undefined || dependsOn === null) {
    if (onParentFailure !== undefined) throw new InputError('onParentFailure needs dependsOn');
    return { parentIds: [], parentIndexes: [], onParentFailure: null };
  }
  if (!Array.isArray(dependsOn)) throw new InputError('dependsOn must be an array of job ids');
  if (dependsOn.length > 100_000) throw new InputError('dependsOn: at most 100000 parents per job');
  const ids = new Set<string>();
  const indexes = new Set<number>();
  for (const [i, dep] of (dependsOn as unknown[]).entries()) {
    if (typeof dep === 'object' && dep !== null && 'index' in dep) {
      const n = dep.index;
      if (index === null) throw new InputError(`dependsOn[${i}]: { index } is only for enqueueMany`);
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n >= index)
        throw new InputError(`dependsOn[${i}]: index must name an earlier job of this call (0 to ${index - 1})`);
      indexes.add(n);
      continue;
    }
    const text =
      typeof dep === 'number' && Number.isSafeInteger(dep)
        ? String(dep)
        : typeof dep === 'bigint' || typeof dep === 'string'
          ? String(dep)
          : null;
    if (text === null || !/^[1-9][0-9]{0,18}$/.test(text) || BigInt(text) > MAX_ID)
      throw new InputError(`dependsOn[${i}] is not a job id (a positive integer)`);
    ids.add(text);
  }
  if (ids.size + indexes.size === 0) throw new InputError('dependsOn is empty: leave it out for a job without parents');
  return {
    parentIds: [...ids],
    parentIndexes: [...indexes],
    onParentFailure: onParentFailure ?? null,
  };
}

// Ids are drawn from the table's sequence first (RESERVE_IDS), so edges
// between jobs of the same call are plain arrays of ids. Every join is on
// arrays whose size the planner sees: when in-batch ids were drawn inside the
// statement and joined by position, a fan-out of 10,000 planned as a nested
// loop of 10,000 × 10,000 rows (8 s to enqueue).
// The existing parents ($13) are read, not locked (see the file comment): the
// `marker` row names those of the children actually inserted, for the trigger
// that settles them at COMMIT. Parents of the same call are flagged as they
// are inserted ($12) and need nothing at COMMIT.
const INSERT_GRAPH = planned(
  'insert_graph',
  `
WITH p AS (
  SELECT id, status FROM jobvisor.jobs WHERE id = ANY ($13::bigint[])
), ok AS (
  SELECT count(*) = cardinality($13::bigint[]) AS ok FROM p
), e AS (
  SELECT x.child_id, x.parent_id, coalesce(p.status = 'done', false) AS counted
    FROM unnest($14::bigint[], $15::bigint[]) AS x(child_id, parent_id)
    LEFT JOIN p ON p.id = x.parent_id
), w AS (
  SELECT child_id, count(*) FILTER (WHERE NOT counted)::int AS waiting FROM e GROUP BY child_id
), ins AS (
  INSERT INTO jobvisor.jobs (id, queue, kind, payload, priority, max_attempts, run_at, unique_key, trace_context,
                             concurrency_key, status, parents_waiting, on_parent_failure, has_dependents)
  OVERRIDING SYSTEM VALUE
  SELECT j.id, j.queue, j.kind, j.payload, j.priority, coalesce(j.max_attempts, 8),
         coalesce(j.run_at, now() + coalesce(j.delay_ms, 0) * interval '1 millisecond'), j.unique_key, $9::jsonb,
         j.concurrency_key, CASE WHEN w.waiting > 0 THEN 'blocked' ELSE 'pending' END, w.waiting,
         j.on_parent_failure, j.has_dependents
    FROM unnest($16::bigint[], $1::text[], $2::text[], $3::jsonb[], $4::int[], $5::int[], $6::timestamptz[],
                $7::float8[], $8::text[], $10::text[], $11::text[], $12::boolean[])
         AS j(id, queue, kind, payload, priority, max_attempts, run_at, delay_ms, unique_key,
              concurrency_key, on_parent_failure, has_dependents)
    LEFT JOIN w ON w.child_id = j.id
   WHERE (SELECT ok FROM ok)
  ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
  RETURNING id
), edges AS (
  INSERT INTO jobvisor.job_dependencies (child_id, parent_id, counted)
  SELECT e.child_id, e.parent_id, e.counted FROM e JOIN ins ON ins.id = e.child_id
), marker AS (
  INSERT INTO jobvisor.new_edges (parents)
  SELECT array_agg(DISTINCT e.parent_id) FROM e JOIN ins ON ins.id = e.child_id
   WHERE e.parent_id = ANY ($13::bigint[])
  HAVING count(*) > 0
)
SELECT (SELECT ok FROM ok) AS ok,
       (SELECT array_agg(id) FROM unnest($13::bigint[]) AS m(id) WHERE id NOT IN (SELECT id FROM p))::text[] AS missing,
       (SELECT array_agg(id) FROM ins)::text[] AS ids`,
);

/** The error settle_new_edges raises when a parent was deleted before the COMMIT (migration 023). */
function deletedParent(err: unknown): InputError | undefined {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  if (e?.code !== '23503' || typeof e.message !== 'string' || !e.message.startsWith('jobvisor: dependsOn:')) return;
  return new InputError(e.message.slice('jobvisor: '.length), { cause: err });
}

/**
 * Inserts a batch where some jobs have parents, in one statement.
 * @returns each job's id in order, null where a uniqueKey duplicate was skipped.
 * @throws InputError naming parent ids that do not exist (or, on a pool, that
 *   were deleted before the statement committed); nothing is written then.
 */
export async function insertGraph(
  store: Store,
  rows: JobRow[],
  traceContext: string | null,
): Promise<Array<string | null>> {
  const referenced = new Set<number>();
  for (const r of rows) for (const n of r.parentIndexes) referenced.add(n);
  for (const n of referenced)
    if (rows[n]?.uniqueKey !== null)
      throw new InputError(
        `jobs[${n}] has a uniqueKey and is a parent by index: a skipped duplicate would leave its children waiting`,
      );
  const [reserved] = await run<{ ids: string }>(store, RESERVE_IDS, [rows.length]);
  const ids = reserved?.ids ? reserved.ids.split(',') : [];
  const edgeChild: string[] = [];
  const edgeParent: string[] = [];
  const external = new Set<string>();
  rows.forEach((r, i) => {
    const child = ids[i] as string;
    for (const id of r.parentIds) {
      external.add(id);
      edgeChild.push(child);
      edgeParent.push(id);
    }
    for (const n of r.parentIndexes) {
      edgeChild.push(child);
      edgeParent.push(ids[n] as string);
    }
  });
  const [row] = await run<{ ok: boolean; missing: string[] | null; ids: string[] | null }>(store, INSERT_GRAPH, [
    ...jobColumns(rows, traceContext),
    rows.map((r) => r.onParentFailure),
    rows.map((_, i) => (referenced.has(i) ? true : null)),
    intArray([...external]),
    intArray(edgeChild),
    intArray(edgeParent),
    intArray(ids),
  ]).catch((err: unknown) => {
    throw deletedParent(err) ?? err;
  });
  if (!row?.ok) {
    const missing = row?.missing ?? [];
    throw new InputError(`dependsOn: no job ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}`);
  }
  const written = new Set(row.ids ?? []);
  return ids.map((id) => (written.has(id) ? id : null));
}
