/**
 * Enqueueing: one row per job, written with the caller's connection so the job
 * commits or rolls back with the change that caused it. The insert trigger
 * notifies supervisors once per statement.
 *
 * Input is checked completely before anything is sent, so a bad job never
 * aborts the caller's transaction and a batch is never half-written.
 */
import type { Db } from '../db/pool.ts';
import { parseDuration } from '../duration.ts';
import { InputError, notMigrated } from '../errors.ts';
import { checkName, checkQueue } from '../names.ts';
import { qualify } from '../db/schema.ts';
import { captureTraceContext } from '../tracing/context.ts';
import { COPY_JOBS, copyRows } from './copy.ts';
import { planned, run, type Store } from './sql.ts';
import { defaultQueueOf } from './task_defaults.ts';
import type { EnqueueOptions, EnqueueResult, JobSpec, JobSpecOf, PayloadOf } from './enqueue_types.ts';
import { checkKey, checkPayload, shown } from './validate.ts';
import { checkDependencies, insertGraph, jobColumns, type GraphRow } from './workflow.ts';

export type { EnqueueOptions, EnqueueResult, JobSpec, JobSpecOf, PayloadOf, TaskPayloads } from './enqueue_types.ts';

export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
const MAX_BATCH = 100_000;
/**
 * Default cap on one enqueueMany call's size: payload JSON plus kind, queue and
 * unique key, in UTF-8 bytes. 100,000 jobs of up to 1 MiB each could otherwise
 * make one statement of 100 GB; 64 MiB keeps a batch to one reasonable
 * message, with a clear error before anything is sent.
 */
export const DEFAULT_MAX_BATCH_BYTES = 64 * 1024 * 1024;
/** From this many jobs without unique keys, enqueueMany uses COPY (see copy.ts). */
export const COPY_THRESHOLD = 500;

/** A validated job, ready for INSERT or COPY (or, with parents, insertGraph). */
type Row = GraphRow;

/**
 * Builds a validated row. Field names in errors are bare (`kind …`);
 * enqueueMany prefixes them with the job's index only when one is thrown, so a
 * batch of valid jobs builds no message text.
 * @throws InputError naming the bad field.
 */
function toRow(
  kind: string,
  payload: unknown,
  options: Omit<EnqueueOptions, 'schema' | 'maxPayloadBytes' | 'dependsOn'> & { dependsOn?: unknown },
  maxPayloadBytes: number | undefined,
  index: number | null = null,
): Row {
  checkName('kind', kind);
  const queue = options.queue ?? defaultQueueOf(kind);
  checkQueue('queue', queue);
  const priority = options.priority ?? 0;
  if (!Number.isInteger(priority) || Math.abs(priority) > 1_000_000)
    throw new InputError(`priority must be an integer from -1000000 to 1000000, got ${shown(priority)}`);
  const maxAttempts = options.maxAttempts ?? null;
  if (maxAttempts !== null && (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1000))
    throw new InputError(`maxAttempts must be an integer from 1 to 1000, got ${shown(maxAttempts)}`);
  if (options.runAt !== undefined && options.delay !== undefined) throw new InputError('give runAt or delay, not both');
  let runAt: string | null = null;
  if (options.runAt !== undefined) {
    const date =
      options.runAt instanceof Date
        ? options.runAt
        : typeof options.runAt === 'string'
          ? new Date(options.runAt)
          : new Date(Number.NaN);
    if (
      Number.isNaN(date.getTime()) ||
      (typeof options.runAt === 'string' && !/^\d{4}-\d{2}-\d{2}/.test(options.runAt))
    )
      throw new InputError(`runAt ${shown(options.runAt)} is not an ISO 8601 date-time (a string or a Date)`);
    if (date.getUTCFullYear() < 1970 || date.getUTCFullYear() > 9999)
      throw new InputError('runAt must be between 1970 and 9999');
    runAt = date.toISOString();
  }
  let delayMs: number | null = null;
  if (options.delay !== undefined) {
    try {
      if (typeof options.delay !== 'number' && typeof options.delay !== 'string')
        throw new RangeError(`${shown(options.delay)} is not a duration (a number of ms, or text such as "10s")`);
      delayMs = parseDuration(options.delay);
    } catch (err) {
      throw new InputError(`delay ${(err as Error).message}`);
    }
  }
  const uniqueKey = checkKey('uniqueKey', options.uniqueKey);
  const concurrencyKey = checkKey('concurrencyKey', options.concurrencyKey);
  const text = checkPayload(
    'payload',
    payload === undefined ? {} : payload,
    maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
  );
  const graph = checkDependencies(options.dependsOn, options.onParentFailure, index);
  return { queue, kind, payload: text, priority, maxAttempts, runAt, delayMs, uniqueKey, concurrencyKey, ...graph };
}

/**
 * Checks a job without writing it.
 * @throws InputError naming the bad field.
 */
export function validateJob(kind: string, payload: unknown, options: Omit<EnqueueOptions, 'schema'> = {}): void {
  toRow(kind, payload, options, options.maxPayloadBytes);
}

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

/** `traceContext`: the caller's active span (see tracing/context.ts), the same for every row. */
async function insertRows(store: Store, rows: Row[], traceContext: string | null): Promise<EnqueueResult[]> {
  const inserted = await run<{ id: string; kind: string; unique_key: string | null }>(
    store,
    INSERT_JOBS,
    jobColumns(rows, traceContext),
  );
  // Rows come back in insertion order; keyed rows are matched by key so that
  // skipped duplicates can report the id of the job that already exists.
  const byKey = new Map<string, string>();
  const plain: string[] = [];
  for (const r of inserted) {
    if (r.unique_key === null) plain.push(r.id);
    else byKey.set(keyOf(r.kind, r.unique_key), r.id);
  }
  const missing = rows.filter((r) => r.uniqueKey !== null && !byKey.has(keyOf(r.kind, r.uniqueKey)));
  const existing = new Map<string, string>();
  if (missing.length > 0) {
    const found = await run<{ id: string; kind: string; unique_key: string }>(store, FIND_UNIQUE, [
      missing.map((r) => r.kind),
      missing.map((r) => r.uniqueKey),
    ]);
    for (const r of found) existing.set(keyOf(r.kind, r.unique_key), r.id);
  }
  let next = 0;
  const seen = new Set<string>();
  return rows.map((r) => {
    if (r.uniqueKey === null) return { id: plain[next++] ?? null, duplicate: false };
    const key = keyOf(r.kind, r.uniqueKey);
    const id = byKey.get(key);
    // The same key twice in one batch: the first is inserted, the second is a duplicate.
    if (id !== undefined && !seen.has(key)) {
      seen.add(key);
      return { id, duplicate: false };
    }
    return { id: id ?? existing.get(key) ?? null, duplicate: true };
  });
}

/**
 * @throws InputError when the batch is over `maxBytes`. Counted in UTF-16 units
 * first (at most 3 UTF-8 bytes each), so a batch far below the cap costs no
 * encoding.
 */
function checkBatchBytes(rows: Row[], maxBytes: number): void {
  let units = 0;
  for (const r of rows)
    units +=
      r.payload.length + r.kind.length + r.queue.length + (r.uniqueKey?.length ?? 0) + (r.concurrencyKey?.length ?? 0);
  if (units * 3 <= maxBytes) return;
  let bytes = 0;
  for (const r of rows)
    bytes +=
      Buffer.byteLength(r.payload) +
      Buffer.byteLength(r.kind) +
      Buffer.byteLength(r.queue) +
      (r.uniqueKey === null ? 0 : Buffer.byteLength(r.uniqueKey)) +
      (r.concurrencyKey === null ? 0 : Buffer.byteLength(r.concurrencyKey));
  if (bytes > maxBytes)
    throw new InputError(
      `jobs: the batch is ${bytes} bytes, over the enqueueMany limit of ${maxBytes} bytes (maxBatchBytes); split it`,
    );
}

function keyOf(kind: string, key: string): string {
  return `${kind}\u0000${key}`;
}

/**
 * Enqueues one job with `db`: a pg Pool, a Client, or a client inside the
 * caller's open transaction (the job then commits or rolls back with it).
 * @returns the job id, or `{ duplicate: true }` with the existing id when uniqueKey matched.
 * @throws InputError (code INPUT_INVALID) before anything is written, for bad input;
 *   NotMigratedError (code SCHEMA_NOT_MIGRATED) when the database has no jobvisor tables yet.
 */
export async function enqueue<K extends string>(
  db: Db,
  kind: K,
  payload: PayloadOf<K>,
  options: EnqueueOptions = {},
): Promise<EnqueueResult> {
  const row = toRow(kind, payload, options, options.maxPayloadBytes);
  const schema = options.schema ?? 'jobvisor';
  const [result] = await written(schema, () => insertAny({ db, schema }, [row], captureTraceContext()));
  return result as EnqueueResult;
}

/** Runs an insert; a database that `jobvisor migrate` has not prepared gives a NotMigratedError. */
async function written<T>(schema: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw notMigrated(err, schema) ?? err;
  }
}

/**
 * Enqueues many jobs in one statement (all or nothing).
 * @returns one result per job, in order.
 * @throws InputError naming the index and field of the first bad job, or when the
 *   whole batch is over `maxBatchBytes` (default 64 MiB); nothing is written.
 *   NotMigratedError when the database has no jobvisor tables yet.
 */
export async function enqueueMany<K extends string>(
  db: Db,
  jobs: readonly ({ kind: K } & JobSpecOf<K>)[],
  options: { schema?: string; maxPayloadBytes?: number; maxBatchBytes?: number } = {},
): Promise<EnqueueResult[]> {
  if (!Array.isArray(jobs)) throw new InputError('jobs must be an array');
  if (jobs.length === 0) return [];
  if (jobs.length > MAX_BATCH)
    throw new InputError(`at most ${MAX_BATCH} jobs per enqueueMany call, got ${jobs.length}`);
  const rows = new Array<Row>(jobs.length);
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i] as JobSpec | null | undefined;
    if (typeof job !== 'object' || job === null) throw new InputError(`jobs[${i}] must be an object`);
    try {
      rows[i] = toRow(job.kind, job.payload, job, options.maxPayloadBytes, i);
    } catch (err) {
      throw err instanceof InputError ? new InputError(`jobs[${i}].${err.message}`, { cause: err.cause }) : err;
    }
  }
  checkBatchBytes(rows, options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES);
  const schema = options.schema ?? 'jobvisor';
  const graph = rows.some((r) => r.parentIds.length + r.parentIndexes.length > 0);
  if (!graph && rows.length >= COPY_THRESHOLD && rows.every((r) => r.uniqueKey === null && r.concurrencyKey === null)) {
    const ids = await written(schema, () =>
      copyRows(db, schema, rows, (s) => qualify(COPY_JOBS, s), captureTraceContext()),
    );
    return ids.map((id) => ({ id, duplicate: false }));
  }
  return written(schema, () => insertAny({ db, schema }, rows, captureTraceContext()));
}

/** Plain rows take INSERT_JOBS as before; a batch where any job has parents takes insertGraph. */
async function insertAny(store: Store, rows: Row[], traceContext: string | null): Promise<EnqueueResult[]> {
  if (!rows.some((r) => r.parentIds.length + r.parentIndexes.length > 0)) return insertRows(store, rows, traceContext);
  const ids = await insertGraph(store, rows, traceContext);
  const skipped = rows.filter((r, i) => ids[i] === null && r.uniqueKey !== null);
  const existing = new Map<string, string>();
  if (skipped.length > 0) {
    const found = await run<{ id: string; kind: string; unique_key: string }>(store, FIND_UNIQUE, [
      skipped.map((r) => r.kind),
      skipped.map((r) => r.uniqueKey),
    ]);
    for (const r of found) existing.set(keyOf(r.kind, r.unique_key), r.id);
  }
  return rows.map((r, i) => {
    const id = ids[i] ?? null;
    if (id !== null) return { id, duplicate: false };
    return { id: r.uniqueKey === null ? null : (existing.get(keyOf(r.kind, r.uniqueKey)) ?? null), duplicate: true };
  });
}
