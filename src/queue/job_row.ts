/**
 * The one shape of a validated job on its way into the table, and its columns
 * as the insert statements take them. Every path of enqueue (INSERT, COPY,
 * the graph insert of workflows) starts from a JobRow: enqueue.ts makes
 * them (with validate.ts and workflow.ts's checkDependencies) and picks the path.
 */

/** A validated job: text payload, defaults not yet applied (null), parents if any. */
export interface JobRow {
  queue: string;
  kind: string;
  /** JSON text. */
  payload: string;
  priority: number;
  maxAttempts: number | null;
  runAt: string | null;
  delayMs: number | null;
  uniqueKey: string | null;
  concurrencyKey: string | null;
  onParentFailure: 'cancel' | 'run' | null;
  /** Existing parent ids (digit strings), without duplicates. */
  parentIds: string[];
  /** Earlier jobs of the same call, by index, without duplicates. */
  parentIndexes: number[];
}

/**
 * The parameters $1–$10 of an insert of `rows`, column by column, as the plain
 * insert (insert_jobs.ts) and the graph insert (workflow.ts) both take them:
 * queue, kind, payload, priority, max_attempts, run_at, delay, unique_key,
 * the trace context (one for every row), concurrency_key.
 */
export function jobColumns(rows: JobRow[], traceContext: string | null): unknown[] {
  return [
    rows.map((r) => r.queue),
    rows.map((r) => r.kind),
    rows.map((r) => r.payload),
    rows.map((r) => r.priority),
    rows.map((r) => r.maxAttempts),
    rows.map((r) => r.runAt),
    rows.map((r) => r.delayMs),
    rows.map((r) => r.uniqueKey),
    traceContext,
    rows.map((r) => r.concurrencyKey),
  ];
}
