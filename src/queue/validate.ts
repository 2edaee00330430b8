/**
 * Limits on what a job's payload may carry, checked before anything reaches the
 * database: any JSON value PostgreSQL's jsonb can store. Kinds and queue names
 * are checked by ../names.ts.
 */
import { InputError } from '../errors.ts';

export const MAX_PAYLOAD_DEPTH = 100;

/**
 * Serialises a payload to JSON text.
 * @throws InputError when it is not JSON, too large, too deep, or holds text jsonb rejects.
 */
export function checkPayload(field: string, payload: unknown, maxBytes: number): string {
  walk(field, payload, 0);
  const text = JSON.stringify(payload);
  if (text === undefined) throw new InputError(`${field} is not a JSON value`);
  // UTF-8 takes at most 3 bytes per UTF-16 unit: short texts need no count.
  const bytes = text.length * 3 <= maxBytes ? 0 : Buffer.byteLength(text);
  if (bytes > maxBytes)
    throw new InputError(
      `${field} is ${bytes} bytes of JSON; the limit is ${maxBytes} (store large data elsewhere and pass its id)`,
    );
  return text;
}

/**
 * Checks `value` the way JSON.stringify will serialise it. `serialised`: value is
 * what a toJSON() returned, which JSON.stringify does not pass to toJSON again.
 */
function walk(field: string, value: unknown, depth: number, serialised = false): void {
  if (depth > MAX_PAYLOAD_DEPTH) throw new InputError(`${field} is nested deeper than ${MAX_PAYLOAD_DEPTH} levels`);
  switch (typeof value) {
    case 'string':
      checkText(field, value);
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new InputError(`${field} holds ${value}, which JSON cannot represent`);
      return;
    case 'boolean':
      return;
    case 'object':
      if (value === null) return;
      // A Date serialises as its ISO text, another object as whatever its toJSON()
      // returns: that is what reaches the database, so that is what is checked.
      if (!serialised && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        walk(field, (value as { toJSON: (key: string) => unknown }).toJSON(''), depth, true);
        return;
      }
      if (Array.isArray(value)) {
        for (const item of value) walk(field, item, depth + 1);
        return;
      }
      for (const key of Object.keys(value)) {
        checkText(field, key);
        const item = (value as Record<string, unknown>)[key];
        if (item !== undefined && typeof item !== 'function') walk(field, item, depth + 1);
      }
      return;
    case 'bigint':
    case 'function':
    case 'symbol':
    case 'undefined':
      throw new InputError(`${field} holds a ${typeof value}, which is not JSON`);
  }
}

function checkText(field: string, text: string) {
  if (text.includes('\u0000'))
    throw new InputError(`${field} contains a NUL character (\\u0000), which PostgreSQL cannot store`);
  if (!text.isWellFormed()) throw new InputError(`${field} contains invalid UTF-16 (a lone surrogate)`);
}

/** A value for an error message: one line, bounded, and never a throw itself. */
export function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  try {
    return String(value);
  } catch {
    return typeof value;
  }
}

/** A key option (uniqueKey, concurrencyKey): 1 to 1000 characters of well-formed text, or none. */
export function checkKey(name: string, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > 1000)
    throw new InputError(`${name} must be a string of 1 to 1000 characters`);
  if (value.includes('\u0000') || !value.isWellFormed())
    throw new InputError(`${name} contains a NUL character or invalid UTF-16`);
  return value;
}
