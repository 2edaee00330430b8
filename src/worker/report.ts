/**
 * What a task reports back, turned into the JSON text the supervisor stores:
 * its return value (column `result`) and its progress values (`progress`).
 *
 * Both are checked here, in the thread that made them, so a value the database
 * cannot hold fails its own job with a clear error and never reaches a batch
 * write (where one bad row would cost its neighbours a split).
 */
import { describe } from './convert.ts';

/** The largest ctx.progress() value, in bytes of JSON: progress is a small status, not a result. */
export const MAX_PROGRESS_BYTES = 4096;

// PostgreSQL's jsonb cannot hold the character U+0000, nor an unpaired UTF-16
// surrogate (JSON.stringify escapes exactly those as \udXXX; paired ones stay
// raw). Both show as escapes preceded by an even number of backslashes (not
// themselves escaped text). Caught here, such a value fails its own job; in
// the batch write it would fail the statement for every row.
const NUL = /(?<!\\)(?:\\\\)*\\u0000/;
const LONE_SURROGATE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/i;

/** Thrown for a value that cannot be stored; `code` is stable. */
export class ReportError extends Error {
  constructor(
    readonly code: 'ResultTooLarge' | 'ResultNotJson' | 'ProgressTooLarge' | 'ProgressNotJson',
    message: string,
  ) {
    super(message);
    this.name = code;
  }
}

/**
 * The JSON text of a task's return value; undefined when there is nothing to
 * store (undefined, or a value JSON leaves out, such as a function).
 * @throws ReportError naming jobs.maxResultBytes when the JSON is over it, or
 *   saying why the value is not JSON (BigInt, a cycle, a throwing toJSON, U+0000).
 */
export function encodeResult(value: unknown, maxBytes: number): string | undefined {
  if (value === undefined) return undefined;
  const json = toJson(value, 'ResultNotJson', "the task's return value");
  if (json === undefined) return undefined;
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes)
    throw new ReportError(
      'ResultTooLarge',
      `the task's return value is ${bytes} bytes of JSON, over jobs.maxResultBytes (${maxBytes}); store large output elsewhere and return a reference`,
    );
  return json;
}

/**
 * The JSON text of a ctx.progress() value.
 * @throws ReportError when it is not JSON or over MAX_PROGRESS_BYTES.
 */
export function encodeProgress(value: unknown): string {
  const json = toJson(value, 'ProgressNotJson', 'the progress value') ?? 'null';
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_PROGRESS_BYTES)
    throw new ReportError(
      'ProgressTooLarge',
      `the progress value is ${bytes} bytes of JSON, over the ${MAX_PROGRESS_BYTES}-byte limit of ctx.progress()`,
    );
  return json;
}

function toJson(value: unknown, code: 'ResultNotJson' | 'ProgressNotJson', what: string): string | undefined {
  let json: string | undefined;
  try {
    // undefined for a function, a symbol or undefined itself, whatever its type says.
    json = JSON.stringify(value);
  } catch (err) {
    const reason = err instanceof Error ? err.message : describe(err);
    throw new ReportError(code, `${what} cannot be stored as JSON: ${reason}`);
  }
  const refused = json === undefined ? undefined : jsonbRefusal(json);
  if (refused !== undefined) throw new ReportError(code, `${what} cannot be stored as JSON: ${refused}`);
  return json;
}

/** Why PostgreSQL's jsonb would refuse this JSON text (U+0000, an unpaired surrogate); undefined when it takes it. */
export function jsonbRefusal(json: string): string | undefined {
  if (NUL.test(json)) return "it holds the character U+0000, which PostgreSQL's jsonb refuses";
  if (LONE_SURROGATE.test(json)) return "it holds an unpaired UTF-16 surrogate, which PostgreSQL's jsonb refuses";
  return undefined;
}
