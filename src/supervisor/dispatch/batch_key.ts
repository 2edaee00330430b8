/**
 * The batch key of a job: the value of one top-level field of its payload
 * (task option `batch.key`), as JSON text, so that jobs with equal values share
 * a call and others never do.
 *
 * Payloads reach the supervisor as JSON text and are parsed in the worker
 * thread; only a batch task that names a key has its jobs' payloads parsed on
 * the main thread too, once per job, when the job is claimed. Payloads are
 * small by contract ("ids, not records"): JSON.parse of a 100-byte payload
 * costs about a microsecond here, beside the tens of microseconds a job costs
 * the main thread anyway (claim, dispatch, outcome). A payload that is not an
 * object, or lacks the field, has no key: such jobs share calls among themselves.
 */

/** The JSON text of `payload[field]`, or undefined when the payload has no such field. Never throws. */
export function batchKeyOf(payload: string | null, field: string): string | undefined {
  if (payload === null) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  if (!Object.hasOwn(value, field)) return undefined;
  return JSON.stringify((value as Record<string, unknown>)[field]);
}
