/**
 * Enqueueing: one row per job, written with the caller's connection so the job
 * commits or rolls back with the change that caused it. The insert trigger
 * notifies supervisors once per statement.
 *
 * Input is checked completely before anything is sent, so a bad job never
 * aborts the caller's transaction and a batch is never half-written.
 */
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../config/payload.ts';
import type { Db } from '../db/pool.ts';
import { parseDuration } from '../duration.ts';
import { InputError, messageOf, notMigrated } from '../errors.ts';
import { checkName, checkQueue } from '../names.ts';
import { captureTraceContext } from '../tracing/context.ts';
import { copyRows } from './copy.ts';
import type {
  BatchJob,
  DynamicKind,
  EnqueueOptions,
  EnqueueResult,
  JobDefaults,
  JobDefinition,
  JobSpec,
  Kind,
  PayloadFor,
} from './enqueue_types.ts';
import { insertJobs } from './insert_jobs.ts';
import { checkKey, checkPayload, shown } from './validate.ts';
import { checkDependencies } from './workflow.ts';
import type { JobRow } from './job_row.ts';

export type * from './enqueue_types.ts';

export { DEFAULT_MAX_PAYLOAD_BYTES };
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
): JobRow {
  checkName('kind', kind);
  // The caller's queue, else the defineJob handle's (merged in by the caller), else
  // "default": never something this process happened to read elsewhere.
  const queue = options.queue ?? 'default';
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
      throw new InputError(`delay ${messageOf(err)}`);
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

/**
 * @throws InputError when the batch is over `maxBytes`. Counted in UTF-16 units
 * first (at most 3 UTF-8 bytes each), so a batch far below the cap costs no
 * encoding.
 */
function checkBatchBytes(rows: JobRow[], maxBytes: number): void {
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

/**
 * Enqueues one job with `db`: a pg Pool, a Client, or a client inside the
 * caller's open transaction (the job then commits or rolls back with it).
 * `kind` is a kind's name (declared in TaskPayloads once the app declares any,
 * or a `DynamicKind`) or a handle from defineJob, whose defaults fill in the
 * options the caller does not give.
 * @returns the job's id; `duplicate: true` with the existing job's id when uniqueKey matched one.
 * @throws InputError (code INPUT_INVALID) before anything is written, for bad input;
 *   NotMigratedError (code SCHEMA_NOT_MIGRATED) when the database has no jobvisor tables yet.
 */
export async function enqueue<K extends Kind | DynamicKind | JobDefinition<never>>(
  db: Db,
  kind: K,
  payload: PayloadFor<K>,
  options: EnqueueOptions = {},
): Promise<EnqueueResult> {
  const [name, merged] = isJobDefinition(kind) ? [kind.kind, withDefaults(kind.options, options)] : [kind, options];
  const row = toRow(name, payload, merged, options.maxPayloadBytes);
  const schema = options.schema ?? 'jobvisor';
  const [result] = await written(schema, () => insertJobs({ db, schema }, [row], captureTraceContext()));
  return result as EnqueueResult;
}

function isJobDefinition(kind: unknown): kind is JobDefinition<never> {
  if (typeof kind !== 'object' || kind === null || !('kind' in kind) || !('options' in kind)) return false;
  return typeof kind.options === 'object' && kind.options !== null;
}

/** `options` with a defineJob handle's defaults where it names none (an explicit `undefined` is none). */
export function withDefaults<O extends JobDefaults>(defaults: Readonly<JobDefaults>, options: O): O {
  return {
    ...options,
    queue: options.queue ?? defaults.queue,
    priority: options.priority ?? defaults.priority,
    maxAttempts: options.maxAttempts ?? defaults.maxAttempts,
  };
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
export async function enqueueMany(
  db: Db,
  jobs: readonly BatchJob[],
  options: { schema?: string; maxPayloadBytes?: number; maxBatchBytes?: number } = {},
): Promise<EnqueueResult[]> {
  if (!Array.isArray(jobs)) throw new InputError('jobs must be an array');
  if (jobs.length === 0) return [];
  if (jobs.length > MAX_BATCH)
    throw new InputError(`at most ${MAX_BATCH} jobs per enqueueMany call, got ${jobs.length}`);
  const rows = new Array<JobRow>(jobs.length);
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
    const ids = await written(schema, () => copyRows(db, schema, rows, captureTraceContext()));
    return ids.map((id) => ({ id, duplicate: false }));
  }
  return written(schema, () => insertJobs({ db, schema }, rows, captureTraceContext()));
}
