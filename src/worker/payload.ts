/**
 * A job's payload text to the value its task receives.
 *
 * JSON numbers become JavaScript numbers, which hold integers exactly only up
 * to 2^53 − 1. A producer in Go, Java or SQL may write an int64 id beyond that
 * (9007199254740993), and JSON.parse would hand the task a different id without
 * a word. Such a payload is refused instead: the job fails permanently with an
 * error naming the first such number's path, e.g. `payload.order.id`. Send
 * such ids as strings.
 *
 * Refused means: the number's text and the number JavaScript reads from it are
 * different values. Large numbers that a JavaScript producer wrote (1e300, a
 * double beyond 2^53) come back from jsonb as long digit strings of exactly the
 * value that was sent, so they are read back exactly and pass; 2^53 + 1 does not.
 *
 * The check costs nothing on ordinary payloads: only a text holding a run of 16
 * or more digits is scanned. PostgreSQL prints jsonb numbers without exponents,
 * so a lossy integer always appears as such a run.
 */

import { isSecretKey } from '../secrets.ts';
import { messageOf } from '../errors.ts';

/** A payload no retry can fix. */
export class PayloadError extends Error {
  readonly permanent = true;
  readonly code: 'payload_invalid_json' | 'payload_unsafe_integer' | 'payload_too_large';
  constructor(code: PayloadError['code'], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = code === 'payload_too_large' ? 'PayloadTooLarge' : 'PayloadError';
    this.code = code;
  }
}

/**
 * Why a payload over jobs.maxPayloadBytes is not run, from what was measured:
 * the JSON text's size, or (text never built) the stored size.
 */
export function payloadTooLarge(
  size: { payloadBytes: number | null; payloadStoredBytes: number | null },
  maxPayloadBytes: number,
): string {
  const what =
    size.payloadBytes !== null
      ? `${size.payloadBytes} bytes of JSON,`
      : `stored in ${size.payloadStoredBytes} bytes, so its JSON is far`;
  return `the payload is ${what} over jobs.maxPayloadBytes (${maxPayloadBytes})`;
}

const MAYBE_UNSAFE = /\d{16}/;

/**
 * @throws PayloadError when the text is not JSON or holds an integer that a
 * JavaScript number would change. Its message never quotes the payload's
 * text (V8's JSON errors do), nor a number under a secret's name
 * (secrets.ts): a job's error reaches the logs, `last_error` and the dashboard.
 */
export function parsePayload(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const at = /position (\d+)/.exec(messageOf(err))?.[1];
    throw new PayloadError('payload_invalid_json', `payload is not valid JSON${at ? ` (at character ${at})` : ''}`, {
      cause: err,
    });
  }
  if (MAYBE_UNSAFE.test(text)) {
    const lossy = firstLossyInteger(text);
    if (lossy !== undefined) {
      const found = pathOfNumber(value, Number(lossy));
      // Unknown where it is: it may be a secret's.
      const quoted = found && !found.secret ? ` (${lossy})` : '';
      const reads = found && !found.secret ? ` (it would read ${String(Number(lossy))})` : '';
      throw new PayloadError(
        'payload_unsafe_integer',
        `${found?.path ?? 'payload'} is an integer beyond 2^53 - 1${quoted} that JavaScript cannot hold exactly` +
          `${reads}; send it as a string`,
      );
    }
  }
  return value;
}

/**
 * The first integer token of a JSON text (outside strings) whose value changes
 * when read as a JavaScript number, or undefined.
 */
export function firstLossyInteger(text: string): string | undefined {
  const token = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
  for (let m = token.exec(text); m !== null; m = token.exec(text)) {
    const t = m[0];
    if (t.startsWith('"') || !/^-?\d{16,}$/.test(t)) continue;
    if (!sameDecimal(t, String(Number(t)))) return t;
  }
  return undefined;
}

/** Whether two decimal numerals (JSON or JavaScript's own form, e.g. "1e+300") denote the same value. */
function sameDecimal(a: string, b: string): boolean {
  const x = canonical(a);
  const y = canonical(b);
  return x.negative === y.negative && x.digits === y.digits && x.exponent === y.exponent;
}

/** A numeral as sign, significant digits and a power of ten. */
function canonical(numeral: string): { negative: boolean; digits: string; exponent: number } {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(numeral);
  if (!m) return { negative: false, digits: numeral, exponent: 0 };
  const fraction = m[3] ?? '';
  let digits = (m[2] as string) + fraction;
  let exponent = Number(m[4] ?? 0) - fraction.length;
  digits = digits.replace(/^0+/, '');
  const trimmed = digits.replace(/0+$/, '');
  exponent += digits.length - trimmed.length;
  return { negative: m[1] === '-' && trimmed !== '', digits: trimmed, exponent: trimmed === '' ? 0 : exponent };
}

/**
 * Path of the first number in `value` equal to `n`, and whether a key on the
 * way names a secret (secrets.ts), or undefined. Iterative: any depth.
 */
export function pathOfNumber(
  value: unknown,
  n: number,
  root = 'payload',
): { path: string; secret: boolean } | undefined {
  const stack: Array<[unknown, string, boolean]> = [[value, root, false]];
  while (stack.length > 0) {
    const [v, path, secret] = stack.pop() as [unknown, string, boolean];
    if (typeof v === 'number') {
      if (v === n) return { path, secret };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}[${i}]`, secret]);
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        stack.push([(v as Record<string, unknown>)[key], `${path}${keyPath(key)}`, secret || isSecretKey(key)]);
      }
    }
  }
  return undefined;
}

function keyPath(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
