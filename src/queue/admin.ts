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
  run_at: Date;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  locked_by: string | null;
  unique_key: string | null;
  last_error: string | null;
  payload: unknown;
}

const LIST_JOBS = prepared(
  'list_jobs',
  `
SELECT id, queue, kind, status, priority, attempts, max_attempts, run_at, created_at, started_at,
       finished_at, locked_by, unique_key, last_error, payload
  FROM jobvisor.jobs
 WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR queue = $3)
 ORDER BY id DESC
 LIMIT $4`,
);

export async function listJobs(
  store: Store,
  filter: { status?: string; kind?: string; queue?: string; limit: number },
): Promise<JobRow[]> {
  return run<JobRow>(store, LIST_JOBS, [
    filter.status ?? null,
    filter.kind ?? null,
    filter.queue ?? null,
    filter.limit,
  ]);
}

// A retried job starts afresh: attempts back to 0, due now. Only dead letters
// and cancelled jobs can be retried; pending, running and done ones are left alone.
const RETRY_JOBS = prepared(
  'retry_jobs',
  `
UPDATE jobvisor.jobs
   SET status = 'pending', attempts = 0, run_at = now(), finished_at = NULL, locked_until = NULL
 WHERE id = ANY($1::bigint[]) AND status IN ('failed', 'cancelled')
RETURNING id`,
);

const RETRY_FAILED = prepared(
  'retry_failed',
  `
UPDATE jobvisor.jobs
   SET status = 'pending', attempts = 0, run_at = now(), finished_at = NULL, locked_until = NULL
 WHERE status = 'failed' AND ($1::text IS NULL OR kind = $1)
RETURNING id`,
);

export async function retryJobs(store: Store, ids: string[]): Promise<string[]> {
  return (await run<{ id: string }>(store, RETRY_JOBS, [ids])).map((r) => r.id);
}

export async function retryFailedJobs(store: Store, kind?: string): Promise<string[]> {
  return (await run<{ id: string }>(store, RETRY_FAILED, [kind ?? null])).map((r) => r.id);
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
