/**
 * Writing a batch so that one bad row cannot hold back the rest.
 *
 * A batch statement is all or nothing: one row the database refuses (a value
 * out of range, a constraint, a user's trigger) fails it for every row. An
 * error that says nothing about the rows (a lost connection, an overload; see
 * keepsBatch) keeps the batch to be tried again later. Any other error splits the range in halves, each written on
 * its own, until the row that fails is alone; that row goes to `alone` (a
 * minimal fallback write) and every other row is written normally. A batch
 * with one bad row costs about 2·log2(n) extra statements, once.
 */
import { isRetryableDbError } from '../../errors.ts';

export interface SplitWrite {
  /** Writes rows [lo, hi) in one statement. */
  write(lo: number, hi: number): Promise<void>;
  /** Deals with row i alone after its batch write failed with `err`. */
  alone(i: number, err: unknown): Promise<void>;
  /** Default: keepsBatch. */
  retryable?: (err: unknown) => boolean;
  /** Rows per statement at most (default: all of them in one). */
  maxRows?: number;
}

export interface SplitResult {
  /** Rows not written because of a retryable error: keep them and try again. */
  unwritten: number[];
  /** That retryable error. */
  retryError?: unknown;
  /** Rows whose own fallback failed too (non-retryable): given up, with the error. */
  abandoned: Array<{ index: number; err: unknown }>;
}

/**
 * True when a failed batch write says nothing about its rows, so the batch is
 * kept and tried again whole: what isRetryableDbError retries (connection lost,
 * restart, conflict), plus SQLSTATE classes 53 (insufficient resources: disk
 * full, out of memory), 57 (operator intervention, e.g. 57014 statement
 * timeout), 42 and 3F (the statement itself is wrong for this database: a
 * missing column, function or schema during a deploy, a revoked privilege).
 * Splitting on those would dead-letter healthy rows one by one while the
 * database is merely slow or mid-migration.
 */
export function keepsBatch(err: unknown): boolean {
  if (isRetryableDbError(err)) return true;
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(53|57|42|3F)[0-9A-Z]{3}$/.test(code);
}

/**
 * Writes rows [0, n) in statements of at most `w.maxRows` rows, one after
 * another, splitting around rows the database refuses. Never throws. After a
 * retryable error no further statement starts: the rows of the failed
 * statement and of every later one come back as `unwritten`.
 */
export async function writeSplitting(n: number, w: SplitWrite): Promise<SplitResult> {
  const retryable = w.retryable ?? keepsBatch;
  const result: SplitResult = { unwritten: [], abandoned: [] };
  const step = Math.max(1, w.maxRows ?? n);
  let lo = 0;
  while (lo < n && result.retryError === undefined) {
    const hi = Math.min(n, lo + step);
    await writeChunk(lo, hi, w, retryable, result);
    lo = hi;
  }
  if (result.retryError !== undefined) for (let i = lo; i < n; i++) result.unwritten.push(i);
  result.unwritten.sort((a, b) => a - b);
  return result;
}

/** Writes one statement's rows, halving around a refused row until it is alone. */
async function writeChunk(
  from: number,
  to: number,
  w: SplitWrite,
  retryable: (err: unknown) => boolean,
  result: SplitResult,
): Promise<void> {
  // Ranges still to write, last one first out, so rows are written in order.
  const todo: Array<[number, number]> = [[from, to]];
  while (todo.length > 0) {
    const [lo, hi] = todo.pop() as [number, number];
    try {
      await w.write(lo, hi);
      continue;
    } catch (err) {
      if (retryable(err)) {
        result.retryError = err;
        for (const [a, b] of [[lo, hi] as [number, number], ...todo])
          for (let i = a; i < b; i++) result.unwritten.push(i);
        return;
      }
      if (hi - lo > 1) {
        const mid = lo + Math.ceil((hi - lo) / 2);
        todo.push([mid, hi], [lo, mid]);
        continue;
      }
      try {
        await w.alone(lo, err);
      } catch (fallbackErr) {
        if (retryable(fallbackErr)) {
          result.retryError = fallbackErr;
          result.unwritten.push(lo);
          for (const [a, b] of todo) for (let i = a; i < b; i++) result.unwritten.push(i);
          return;
        }
        result.abandoned.push({ index: lo, err: fallbackErr });
      }
    }
  }
}
