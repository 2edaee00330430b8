/**
 * A job's payload text to the value its task receives.
 *
 * JSON numbers become JavaScript numbers, which hold integers exactly only up
 * to 2^53 − 1. A producer in Go, Java or SQL may write an int64 id beyond that
 * (9007199254740993), and JSON.parse would hand the task a different id without
 * a word. Such a payload is refused instead: the job fails permanently with an
 * error naming the first unsafe number's path, e.g. `payload.order.id`. Send
 * such ids as strings.
 *
 * The check costs nothing on ordinary payloads: an integer beyond 2^53 needs 16
 * or more digits or an exponent in the text, and only a text containing one of
 * those is walked.
 */

/** A payload no retry can fix. */
export class PayloadError extends Error {
  readonly permanent = true;
  readonly code: 'payload_invalid_json' | 'payload_unsafe_integer';
  constructor(code: PayloadError['code'], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PayloadError';
    this.code = code;
  }
}

const MAYBE_UNSAFE = /\d{16}|\d[eE][+-]?\d/;

/** @throws PayloadError when the text is not JSON or holds an integer beyond ±(2^53 − 1). */
export function parsePayload(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new PayloadError('payload_invalid_json', `payload is not valid JSON: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (MAYBE_UNSAFE.test(text)) {
    const path = unsafeIntegerPath(value);
    if (path !== undefined) {
      throw new PayloadError(
        'payload_unsafe_integer',
        `${path} is an integer beyond 2^53 - 1, which JavaScript cannot hold exactly; send it as a string`,
      );
    }
  }
  return value;
}

/** Path of the first integer number beyond ±(2^53 − 1) in `value`, or undefined. Iterative: any depth. */
export function unsafeIntegerPath(value: unknown, root = 'payload'): string | undefined {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length > 0) {
    const [v, path] = stack.pop() as [unknown, string];
    if (typeof v === 'number') {
      if (Number.isInteger(v) && !Number.isSafeInteger(v)) return path;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}[${i}]`]);
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        stack.push([(v as Record<string, unknown>)[key], `${path}${keyPath(key)}`]);
      }
    }
  }
  return undefined;
}

function keyPath(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
