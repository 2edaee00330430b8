/**
 * Claiming: one statement takes up to `limit` due jobs of one queue, highest
 * priority first, and leases them to `owner`. It commits at once: no row lock
 * is held while a task runs; the lease does the rest.
 *
 * What "due" means, here and in every claim: `status = 'pending'` and
 * `run_at <= now`, taken by priority (lowest first), then run_at, then id. No
 * other status is ever due (a `blocked` job waits for its parents). Each place
 * below states it, because each is shaped for its own index walk; a change to
 * the meaning changes all of them, and test/claim_due.test.ts checks that a
 * plain, a queue-wide limited and a per-key limited queue agree:
 *   - jobvisor.due_job_ids() (migration 010): the plain claim (CLAIM_JOBS) and
 *     the queue-wide limited claim (claim_limited_sql.ts CLAIM_QUEUE_LIMITED);
 *   - claim_limited_sql.ts CLAIM_KEY_LIMITED: `walk` (keys with pending jobs),
 *     `priorities`/`keyless_head` (jobs without a key) and the `kp` walk in
 *     `offers` (each key's due jobs); CLAIM_CHOSEN's UPDATE re-checks
 *     `pending` for both limited claims;
 *   - NEXT_DUE below (when the next pending job comes due);
 *   - the partial indexes the walks read, jobs_pending_idx (migration 001) and
 *     jobs_pending_key_idx (006), `WHERE status = 'pending'`.
 * Readers that count due jobs for people (queue/stats.ts, admin/overview.ts,
 * admin/filter.ts `due`) say the same in their own words.
 *
 * Shape: `WHERE id = ANY((SELECT jobvisor.due_job_ids(queue, n, now)))`: the
 * function (migration 010) picks and locks the due ids, one index probe per
 * priority present, so jobs not yet due are never read; the UPDATE then finds
 * them by primary key. Written as `UPDATE … FROM (SELECT …)`, the planner
 * often flipped to a hash join that scanned the whole table on every claim;
 * the array keeps the primary-key path (measured +12–39 % jobs/s on a 100k
 * backlog). A single scan in claim order had to step over every delayed job
 * ahead of the due ones: with 200,000 jobs delayed to tomorrow each claim of a
 * trickle took 6.3 ms instead of 0.65. UPDATE returns rows in table order, so
 * the outer query restores claim order for the dispatcher.
 *
 * The claim's commit does not wait for its WAL to reach disk
 * (`synchronous_commit` off for this transaction only, set by a one-time
 * filter): that wait was about 0.5 ms of the 2.2 ms from enqueue to task start.
 * It is safe because a claim is the one write that may be forgotten. Should
 * the database crash within the moment before the WAL writer flushes it, the
 * job is simply pending again with its old attempt count and runs again, as
 * at-least-once delivery allows; the first run's outcome write is fenced off
 * because the row is no longer `running`. Every later write (outcomes, lease
 * renewals) commits durably and flushes the claim's WAL with it.
 *
 * Not so across a failover: a claim the primary had not yet sent to its
 * standby is forgotten by the promoted standby while its task still runs, and
 * another supervisor claims the job there: two runs at once. So when the server
 * has synchronous standbys (`synchronous_standby_names`, read at start and
 * after each failover by primary_watch.ts) the claim commits as every other
 * write does (`durable`), and a promoted synchronous standby knows every claim
 * whose task started.
 *
 * Sent unnamed (`planned`), so it is planned with its arguments every time.
 * As a named prepared statement it kept the generic plan chosen while the table
 * was tiny (a Seq Scan and a Sort), and a burst of 100,000 jobs after an idle
 * night ran at 945 jobs/s until autovacuum analyzed the table (13,800 with
 * ANALYZE); planning costs 0.2 ms per claim, not per job (BENCHMARKS.md).
 */
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../config/payload.ts';
import { planned, run, runArrays, type Now, type Store } from './sql.ts';
import type { ClaimedJob } from './types.ts';

/**
 * Largest stored payload (pg_column_size) whose JSON text a claim carries. A
 * larger one is claimed without it: the worker thread that runs the job reads
 * it (queue/payload_read.ts), so neither the claim nor the supervisor's main
 * thread ever holds it.
 *
 * Why: 1,200 jobs of 900 KB through two supervisors (concurrency 50, so 2,000
 * claimed ahead) made claims of 1,000 rows carry 900 MB. PostgreSQL wrote each
 * text to disk twice (the claim's CTE and its sort spill past work_mem: 516 MB
 * of temporary files for 200 rows, 5.8 s), the claim outlived its 15 s lease or
 * its 30 s statement timeout, and the main thread spent up to 4.3 s at a time
 * copying 50 payloads into one message for a thread, on a loaded 2-core machine
 * (RELIABILITY.md, "Big payloads").
 *
 * 2 KB: PostgreSQL keeps a value under about 2 KB uncompressed in its row
 * (TOAST_TUPLE_THRESHOLD), so below it the stored size is about the text's;
 * "ids, not records" payloads are far below, and ride the claim as before. A
 * value compressed into fewer bytes may hold more text (up to about 90 times
 * for pglz): a claim of 1,000 such rows carries at most that.
 */
export const INLINE_PAYLOAD_BYTES = 2048;

/**
 * The payload as JSON text, in a claim's RETURNING, when its stored size is at
 * most INLINE_PAYLOAD_BYTES and does not already prove it over the limit ($6):
 * a jsonb value's binary form is at most about five times its JSON text (an
 * array of small numbers), and compression only makes the stored form smaller,
 * so a value stored in more than 8 × the limit has JSON text over the limit.
 * Converting one such row (1 MB stored, 600 MB of JSON text) took 11 s of the
 * claim, long enough for the leases of the jobs claimed with it to run out
 * before the claim returned. Unqualified, so it serves every claim statement
 * (only the jobs table has a `payload` column in them).
 */
export const PAYLOAD_TEXT = `CASE WHEN pg_column_size(payload) <= least($6::bigint * 8, ${INLINE_PAYLOAD_BYTES}) THEN payload::text END AS text,
            pg_column_size(payload) AS stored`;

/**
 * The payload columns of a claim's result, from `claimed AS c` (PAYLOAD_TEXT):
 * the text when within the limit, else its size when over it, else (no text
 * sent) the stored size when that proves it over the limit; `payload_deferred`
 * when no text was sent but the payload may be within the limit: its thread
 * reads it.
 */
export const PAYLOAD_COLUMNS = `CASE WHEN octet_length(c.text) <= $6 THEN c.text END AS payload,
       CASE WHEN octet_length(c.text) > $6 THEN octet_length(c.text) END AS payload_bytes,
       CASE WHEN c.text IS NULL AND c.stored > $6::bigint * 8 THEN c.stored END AS payload_stored,
       c.text IS NULL AND c.stored <= $6::bigint * 8 AS payload_deferred`;

const CLAIM_JOBS = planned(
  'claim_jobs',
  `
WITH claimed AS (
  UPDATE jobvisor.jobs
     SET status = 'running',
         attempts = least(attempts, 2147483646) + 1,
         lease_token = nextval('jobvisor.lease_token_seq'),
         locked_by = $1,
         locked_until = coalesce($5::timestamptz, now()) + $3::float8 * interval '1 millisecond',
         started_at = coalesce($5::timestamptz, now())
   WHERE id = ANY ((SELECT jobvisor.due_job_ids($2, $4, coalesce($5::timestamptz, now())))::bigint[])
     AND (SELECT set_config('synchronous_commit', CASE WHEN $7::boolean THEN current_setting('synchronous_commit') ELSE 'off' END, true)) IS NOT NULL
  RETURNING id, kind, queue, ${PAYLOAD_TEXT}, attempts, max_attempts, priority, run_at, lease_token, trace_context,
            has_steps
)
SELECT c.id, c.kind, c.lease_token::text AS token, ${PAYLOAD_COLUMNS},
       c.attempts, c.max_attempts, extract(epoch FROM c.run_at) * 1000 AS run_at_ms,
       c.trace_context::text AS trace_context, c.has_steps
  FROM claimed AS c
 ORDER BY c.priority, c.run_at, c.id`,
);

/**
 * CLAIM_JOBS' columns in order, read as arrays (runArrays). The queue is not
 * among them: it is the one the claim asked for.
 */
type ClaimColumns = [
  id: string,
  kind: string,
  token: string,
  payload: string | null,
  payloadBytes: number | null,
  payloadStored: number | null,
  payloadDeferred: boolean,
  attempts: number,
  maxAttempts: number,
  runAtMs: string,
  traceContext: string | null,
  hasSteps: boolean | null,
];

/** A claimed row as the limited claim statements return it. */
export interface ClaimRow {
  id: string;
  kind: string;
  queue: string;
  token: string;
  payload: string | null;
  /** The JSON text's size, set only when it is over the limit (payload is then null). */
  payload_bytes: number | null;
  payload_stored: number | null;
  /** No text sent, and the payload may be within the limit: the job's thread reads it. */
  payload_deferred: boolean;
  attempts: number;
  max_attempts: number;
  run_at_ms: string;
  trace_context: string | null;
  /** The job has durable-step records (jobs.has_steps). */
  has_steps: boolean | null;
}

/**
 * Claims up to `limit` due jobs of `queue` for `owner`, leased for `leaseMs`.
 * A payload whose JSON text is over `maxPayloadBytes` (a plain-SQL insert can
 * write one) is not sent: the server measures it and the job comes back with
 * `payload: null` and its size, for the caller to dead-letter. A 600 MB JSON
 * text would otherwise overflow the client's string limit and crash the process
 * with the whole batch claimed. A payload stored in more than
 * INLINE_PAYLOAD_BYTES comes back `payloadDeferred`, without its text.
 */
export async function claimJobs(
  store: Store,
  args: {
    owner: string;
    queue: string;
    limit: number;
    leaseMs: number;
    maxPayloadBytes?: number;
    now?: Now;
    /** Commit with the session's synchronous_commit (synchronous standbys), not off. */
    durable?: boolean;
  },
): Promise<ClaimedJob[]> {
  if (args.limit <= 0) return [];
  const rows = await runArrays<ClaimColumns>(store, CLAIM_JOBS, [
    args.owner,
    args.queue,
    args.leaseMs,
    args.limit,
    args.now ?? null,
    args.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    args.durable === true,
  ]);
  const queue = args.queue;
  return rows.map((r) => ({
    id: r[0],
    token: r[2],
    kind: r[1],
    queue,
    payload: r[3],
    payloadBytes: r[4],
    payloadStoredBytes: r[5],
    payloadDeferred: r[6],
    attempt: r[7],
    maxAttempts: r[8],
    runAtMs: Number(r[9]),
    traceContext: r[10] ?? undefined,
    hasSteps: r[11] === true,
  }));
}

/** A claimed row as the job the dispatcher runs. */
export function claimedJob(r: ClaimRow): ClaimedJob {
  return {
    id: r.id,
    token: r.token,
    kind: r.kind,
    queue: r.queue,
    payload: r.payload,
    payloadBytes: r.payload_bytes,
    payloadStoredBytes: r.payload_stored,
    payloadDeferred: r.payload_deferred,
    attempt: r.attempts,
    maxAttempts: r.max_attempts,
    runAtMs: Number(r.run_at_ms),
    traceContext: r.trace_context ?? undefined,
    hasSteps: r.has_steps === true,
  };
}

// The earliest run_at of each priority present, one index probe each (a loose
// index scan of jobs_pending_idx), then the least of them. `min(run_at)` over the
// queue's pending rows had to read every one of them (run_at is not the index's
// second column), and with the statistics of a tiny table PostgreSQL 17 chose a
// parallel sequential scan of the whole table for it once the table had grown
// (245 ms at a million rows). A probe ordered by the index with LIMIT 1 keeps
// the index plan whatever the statistics say, and costs one step per distinct
// priority instead of one per pending job (an idle queue with 100,000 delayed
// jobs asked this after every empty claim).
const NEXT_DUE = planned(
  'next_due',
  `
WITH RECURSIVE heads AS (
  (SELECT priority, run_at FROM jobvisor.jobs
    WHERE status = 'pending' AND queue = $1
    ORDER BY priority, run_at LIMIT 1)
  UNION ALL
  SELECT next.priority, next.run_at
    FROM heads AS h
   CROSS JOIN LATERAL (
     SELECT priority, run_at FROM jobvisor.jobs
      WHERE status = 'pending' AND queue = $1 AND priority > h.priority
      ORDER BY priority, run_at LIMIT 1) AS next
)
SELECT extract(epoch FROM min(run_at) - coalesce($2::timestamptz, now())) * 1000 AS in_ms FROM heads`,
);

/** Milliseconds until the next pending job of `queue` is due (null: none pending). */
export async function nextDueIn(store: Store, queue: string, now: Now = null): Promise<number | null> {
  const [row] = await run<{ in_ms: string | null }>(store, NEXT_DUE, [queue, now]);
  return row?.in_ms === null || row?.in_ms === undefined ? null : Math.max(0, Number(row.in_ms));
}
