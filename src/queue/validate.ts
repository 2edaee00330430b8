/**
 * Limits on what a job's payload may carry, checked before anything reaches the
 * database: any JSON value PostgreSQL's jsonb can store. Kinds and queue names
 * are checked by ../names.ts.
 */
import { InputError } from '../errors.ts';

export const MAX_PAYLOAD_DEPTH = 100;

/**
 * Serialises a payload to JSON text.
 *
 * Refused, with an InputError naming the path (`payload.user.tags`), rather
 * than stored as JSON.stringify would turn it: a Map or Set (stored as `{}`),
 * an instance of a class without toJSON() (its methods and prototype lost), a
 * function (dropped), undefined or a symbol (dropped, or null in an array),
 * a bigint or a number JSON cannot write, a cycle (named as one), nesting
 * deeper than MAX_PAYLOAD_DEPTH, text PostgreSQL cannot store, more than
 * `maxBytes` of JSON. Dates and other values with toJSON() are checked as
 * what it returns; plain objects of any realm and `Object.create(null)` pass.
 * @throws InputError
 */
export function checkPayload(field: string, payload: unknown, maxBytes: number): string {
  walk({ field, steps: [], ancestors: new Map() }, payload, false);
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
 * Where the walk is. The path is kept as steps (keys and indexes) and written
 * out only for an error: a payload of 100,000 values makes no strings.
 */
interface Walk {
  /** The argument's name (payload, jobs[3].payload). */
  field: string;
  steps: Array<string | number>;
  /** The objects from the root down to here, each with its number of steps: a cycle returns to one. */
  ancestors: Map<object, number>;
}

/** The path of the value `steps` (default: all) lead to, as JavaScript writes it: payload.user.tags[2]. */
function pathOf(w: Walk, steps = w.steps.length): string {
  let out = w.field;
  for (let i = 0; i < steps; i++) {
    const step = w.steps[i] as string | number;
    out +=
      typeof step === 'number'
        ? `[${step}]`
        : /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(step)
          ? `.${step}`
          : `[${JSON.stringify(step.length > 60 ? `${step.slice(0, 60)}…` : step)}]`;
  }
  return out;
}

/**
 * Checks `value` the way JSON.stringify will serialise it. `serialised`: value is
 * what a toJSON() returned, which JSON.stringify does not pass to toJSON again.
 */
function walk(w: Walk, value: unknown, serialised: boolean): void {
  if (w.steps.length > MAX_PAYLOAD_DEPTH)
    throw new InputError(`${w.field} is nested deeper than ${MAX_PAYLOAD_DEPTH} levels`);
  switch (typeof value) {
    case 'string':
      if (!isStorable(value)) throw new InputError(`${pathOf(w)} ${whyNotStorable(value)}`);
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new InputError(`${pathOf(w)} is ${value}, which JSON cannot represent`);
      return;
    case 'boolean':
      return;
    case 'object':
      if (value !== null) walkObject(w, value, serialised);
      return;
    case 'bigint':
      throw new InputError(`${pathOf(w)} is a bigint, which is not JSON (send it as a string)`);
    case 'function':
    case 'symbol':
    case 'undefined':
      throw new InputError(
        `${pathOf(w)} is ${value === undefined ? 'undefined' : `a ${typeof value}`}, which is not JSON`,
      );
  }
}

function walkObject(w: Walk, value: object, serialised: boolean): void {
  const cycle = w.ancestors.get(value);
  if (cycle !== undefined)
    throw new InputError(`${pathOf(w)} refers back to ${pathOf(w, cycle)}: a cycle, which JSON cannot represent`);
  // A Date serialises as its ISO text, another object as whatever its toJSON()
  // returns: that is what reaches the database, so that is what is checked.
  if (!serialised && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    walk(w, (value as { toJSON: (key: string) => unknown }).toJSON(''), true);
    return;
  }
  // new String('x') and its kind: JSON writes the primitive.
  if (value instanceof Number || value instanceof String || value instanceof Boolean) {
    walk(w, value.valueOf(), serialised);
    return;
  }
  const array = Array.isArray(value);
  if (!array) refuseNonPlain(w, value);
  w.ancestors.set(value, w.steps.length);
  if (array) {
    for (let i = 0; i < value.length; i++) {
      w.steps.push(i);
      walk(w, value[i] as unknown, false);
      w.steps.pop();
    }
  } else {
    for (const key of Object.keys(value)) {
      if (!isStorable(key)) throw new InputError(`${pathOf(w)} has a key that ${whyNotStorable(key)}`);
      const item = (value as Record<string, unknown>)[key];
      // JSON leaves out a key whose value is undefined: an optional field.
      if (item === undefined) continue;
      w.steps.push(key);
      walk(w, item, false);
      w.steps.pop();
    }
  }
  w.ancestors.delete(value);
}

/** A plain object passes (of any realm, or without prototype); a Map, a Set or a class instance does not. */
function refuseNonPlain(w: Walk, value: object): void {
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto === null || Object.getPrototypeOf(proto) === null) return;
  if (value instanceof Map)
    throw new InputError(`${pathOf(w)} is a Map, which JSON stores as {}: pass Object.fromEntries(map) or [...map]`);
  if (value instanceof Set) throw new InputError(`${pathOf(w)} is a Set, which JSON stores as {}: pass [...set]`);
  // A class's prototype (or a built-in's) has its own `constructor`; an object
  // that became a prototype through an assignment to a "__proto__" key does not.
  if (!Object.hasOwn(proto, 'constructor'))
    throw new InputError(
      `${pathOf(w)} has another object as its prototype (was a "__proto__" key assigned?), whose fields JSON would drop`,
    );
  const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
  throw new InputError(
    `${pathOf(w)} is an instance of ${typeof name === 'string' && name !== '' ? name : 'a class'} without toJSON(), ` +
      'which JSON would store as its fields alone: pass a plain object, or give the class a toJSON()',
  );
}

function isStorable(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

function whyNotStorable(text: string): string {
  return text.includes('\u0000')
    ? 'contains a NUL character (\\u0000), which PostgreSQL cannot store'
    : 'contains invalid UTF-16 (a lone surrogate)';
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
