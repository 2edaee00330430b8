/**
 * The `batch` task option: its shape as a task module writes it, and its check.
 * A task that declares it is a batch task (batch_types.ts says what its
 * default export receives and returns).
 */
import { parseDuration } from '../duration.ts';
import { messageOf } from '../errors.ts';

/** `batch` in a task's options. */
export interface BatchOptions {
  /** The most jobs one call receives (capped at the queue's `concurrency`). */
  maxSize: number;
  /** How long the first job claimed waits for others ("200ms", "5s", or ms) before the call is made anyway. */
  maxWait: string | number;
  /** A top-level payload field: only jobs with the same value of it share a call (e.g. `'tenant'`). */
  key?: string;
}

/** `batch`, checked, with its wait in ms. */
export interface ResolvedBatch {
  maxSize: number;
  maxWaitMs: number;
  key?: string;
}

/** The most a queue's `concurrency` can be (config/validate.ts), which caps every call anyway. */
export const MAX_BATCH_SIZE = 10_000;
const KEYS = new Set(['maxSize', 'maxWait', 'key']);

/**
 * Checks a task's `options.batch`; `where` names the option in errors.
 * @throws Error naming the option and the bad key.
 */
export function parseBatchOptions(where: string, value: unknown): ResolvedBatch {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${where} must be an object such as { maxSize: 100, maxWait: '200ms', key: 'tenant' }`);
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o))
    if (!KEYS.has(key))
      throw new Error(`${where}: unknown key ${JSON.stringify(key)} (known: ${[...KEYS].join(', ')})`);
  const { maxSize, maxWait, key } = o;
  if (typeof maxSize !== 'number' || !Number.isInteger(maxSize) || maxSize < 1 || maxSize > MAX_BATCH_SIZE)
    throw new Error(`${where}.maxSize must be an integer from 1 to ${MAX_BATCH_SIZE}, got ${JSON.stringify(maxSize)}`);
  if (maxWait === undefined) throw new Error(`${where}.maxWait is required (a duration such as '200ms')`);
  let maxWaitMs: number;
  try {
    if (typeof maxWait !== 'string' && typeof maxWait !== 'number') throw new Error('is not a duration');
    maxWaitMs = parseDuration(maxWait);
  } catch (err) {
    throw new Error(`${where}.maxWait ${messageOf(err)}`, { cause: err });
  }
  const resolved: ResolvedBatch = { maxSize, maxWaitMs };
  if (key !== undefined) {
    if (typeof key !== 'string' || key === '')
      throw new Error(`${where}.key must name a top-level payload field, got ${JSON.stringify(key)}`);
    resolved.key = key;
  }
  return resolved;
}
