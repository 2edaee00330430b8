/** Operator actions behind `jobvisor jobs list|retry|cancel`. */
import { prepared, run, type Store } from './sql.ts';

export interface JobRow {
  id: string;
  queue: string;
  kind: string;
  status: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  run_at: Time;
  created_at: Time;
  started_at: Time | null;
  finished_at: Time | null;
  locked_by: string | null;
  unique_key: string | null;
  last_error: string | null;
  payload: unknown;
  /** The task's return value (JSON), set when it succeeded. */
  result: unknown;
  /** The last value the task gave ctx.progress(). */
  progress: unknown;
  /** Times the job snoozed (not counted in attempts). */
  snoozes: number;
}

const LIST_JOBS = prepared(
  'list_jobs',
  `
SELECT id, queue, kind, status, priority, attempts, max_attempts, run_at, created_at, started_at,
       finished_at, locked_by, unique_key, last_error, payload, result, progress, snoozes
  FROM jobvisor.jobs
 WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR queue = $3)
 ORDER BY id DESC
 LIMIT $4`,
);

export async function listJobs(
  store: Store,
  filter: { status?: string; kind?: string; queue?: string; limit: number },
): Promise<JobRow[]> {
  const rows = await run<JobRow>(store, LIST_JOBS, [
    filter.status ?? null,
    filter.kind ?? null,
    filter.queue ?? null,
    filter.limit,
  ]);
  for (const r of rows) {
    r.run_at = time(r.run_at) as Time;
    r.created_at = time(r.created_at) as Time;
    r.started_at = time(r.started_at);
    r.finished_at = time(r.finished_at);
  }
  return rows;
}

/**
 * A timestamp column's value. Plain SQL can store 'infinity' and '-infinity'
 * (run_at = 'infinity': never due); pg hands those over as ±Infinity numbers,
 * which have no toISOString() and print as null in JSON, so they are named.
 */
export type Time = Date | 'infinity' | '-infinity';

function time(value: unknown): Time | null {
  if (value === Number.POSITIVE_INFINITY) return 'infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-infinity';
  return value as Date | null;
}

/** A Time as text: ISO 8601, or 'infinity' / '-infinity'. */
export function timeText(value: Time): string {
  return value instanceof Date ? value.toISOString() : value;
}

// A retried job starts afresh: attempts and snoozes back to 0, due now. Only dead letters
// and cancelled jobs can be retried; pending, running and done ones are left alone.
const RETRY_JOBS = prepared(
  'retry_jobs',
  `
UPDATE jobvisor.jobs
   SET status = 'pending', attempts = 0, snoozes = 0, run_at = now(), finished_at = NULL, locked_until = NULL
 WHERE id = ANY($1::bigint[]) AND status IN ('failed', 'cancelled')
RETURNING id`,
);

// One batch of dead letters back to pending. Re-queueing a million dead letters
// in one statement held its row locks for 9.4 s and then woke every supervisor
// for a million jobs at once; batches of `limit` rows, each its own statement
// and transaction, keep locks short and let the fleet start on the first ones.
// Rows retried leave status 'failed', so the next batch finds the next rows
// without a cursor. A run retries at most as many rows as were failed when it
// began (COUNT_FAILED), so jobs that fail again meanwhile cannot keep it going.
const COUNT_FAILED = prepared(
  'count_failed',
  `SELECT count(*)::float8 AS n FROM jobvisor.jobs WHERE status = 'failed' AND ($1::text IS NULL OR kind = $1)`,
);

const RETRY_FAILED_BATCH = prepared(
  'retry_failed_batch',
  `
WITH batch AS (
  SELECT id FROM jobvisor.jobs
   WHERE status = 'failed' AND ($1::text IS NULL OR kind = $1)
   LIMIT $2
   FOR UPDATE SKIP LOCKED
)
UPDATE jobvisor.jobs AS j
   SET status = 'pending', attempts = 0, snoozes = 0, run_at = now(), finished_at = NULL, locked_until = NULL
  FROM batch
 WHERE j.id = batch.id
RETURNING j.id`,
);

/** Dead letters retried per statement by default. */
export const RETRY_BATCH_SIZE = 1000;

export async function retryJobs(store: Store, ids: string[]): Promise<string[]> {
  return (await run<{ id: string }>(store, RETRY_JOBS, [ids])).map((r) => r.id);
}

/**
 * Retries dead letters (of `kind`, if given), at most `limit` (default: all),
 * in statements of `batchSize` rows. Calls `onBatch` with each batch's ids.
 * @returns how many were retried.
 */
export async function retryFailedInBatches(
  store: Store,
  options: { kind?: string; limit?: number; batchSize?: number; onBatch?: (ids: string[]) => void } = {},
): Promise<number> {
  const batchSize = options.batchSize ?? RETRY_BATCH_SIZE;
  const [failed] = await run<{ n: number }>(store, COUNT_FAILED, [options.kind ?? null]);
  const limit = Math.min(options.limit ?? Number.POSITIVE_INFINITY, failed?.n ?? 0);
  let retried = 0;
  while (retried < limit) {
    const size = Math.min(batchSize, limit - retried);
    const ids = (await run<{ id: string }>(store, RETRY_FAILED_BATCH, [options.kind ?? null, size])).map((r) => r.id);
    retried += ids.length;
    options.onBatch?.(ids);
    if (ids.length < size) break;
  }
  return retried;
}

/** Retries every dead letter (of `kind`, if given), in batches; returns their ids. */
export async function retryFailedJobs(store: Store, kind?: string): Promise<string[]> {
  const all: string[] = [];
  await retryFailedInBatches(store, { kind, onBatch: (ids) => all.push(...ids) });
  return all;
}

// Cancelling a running job takes its lease away: its supervisor's next heartbeat
// finds the lease gone and aborts the task; the task's result is fenced off.
const CANCEL_JOBS = prepared(
  'cancel_jobs',
  `
UPDATE jobvisor.jobs
   SET status = 'cancelled', finished_at = now(), locked_until = NULL
 WHERE id = ANY($1::bigint[]) AND status IN ('pending', 'running')
RETURNING id`,
);

export async function cancelJobs(store: Store, ids: string[]): Promise<string[]> {
  return (await run<{ id: string }>(store, CANCEL_JOBS, [ids])).map((r) => r.id);
}

const STATUS_OF = prepared('status_of', `SELECT id, status FROM jobvisor.jobs WHERE id = ANY($1::bigint[])`);

export async function statusOf(store: Store, ids: string[]): Promise<Map<string, string>> {
  return new Map((await run<{ id: string; status: string }>(store, STATUS_OF, [ids])).map((r) => [r.id, r.status]));
}
