/**
 * Turns whatever a task threw into the plain `TaskError` that crosses the thread
 * boundary. Total: any value (a Symbol message, a numeric `stack`, a getter or a
 * Proxy that throws, an object whose toString throws, null) gives a TaskError and
 * never throws, because a throw here would escape the job and kill its thread and
 * every neighbour on it.
 */
import { redactText, secretValues } from '../secrets.ts';
import type { TaskError } from './protocol.ts';

const MAX_MESSAGE = 2000;
/** Bound of a recorded stack, in characters, cut at a frame. */
export const MAX_STACK = 4096;
/** A V8 stack frame line: `    at fn (file:line:col)`. */
const FRAME = /^\s+at /;

/** A TaskError for `err`; never throws. */
export function toTaskError(err: unknown): TaskError {
  try {
    if (isError(err)) return fromError(err);
    return {
      name: 'NonError',
      message: `task threw a non-Error value: ${describe(err)}`,
      permanent: false,
      retryInMs: null,
    };
  } catch {
    return {
      name: 'NonError',
      message: 'task threw a value that cannot be described',
      permanent: false,
      retryInMs: null,
    };
  }
}

/**
 * `error` without the values `payload` holds under a secret's name, nor a
 * URL's password, in its message or stack: what a job's failure records goes
 * to the logs, `last_error` and the dashboard. Never throws.
 */
export function withoutSecrets(error: TaskError, payload: unknown): TaskError {
  try {
    const secrets = secretValues(payload);
    const out = { ...error, message: redactText(error.message, secrets) };
    if (error.stack !== undefined) out.stack = redactText(error.stack, secrets);
    return out;
  } catch {
    return { ...error, message: '[an error message that could not be checked for secrets]' };
  }
}

function isError(err: unknown): err is object {
  try {
    return err instanceof Error;
  } catch {
    // A Proxy whose getPrototypeOf trap throws.
    return false;
  }
}

function fromError(err: object): TaskError {
  const name = text(read(err, 'name')) ?? 'Error';
  const message = text(read(err, 'message')) ?? '';
  const stack = read(err, 'stack');
  const retryInMs = read(err, 'retryInMs');
  const out: TaskError = {
    name: clip(name, 200),
    message: clip(message, MAX_MESSAGE),
    permanent: read(err, 'permanent') === true,
    retryInMs: typeof retryInMs === 'number' && Number.isFinite(retryInMs) && retryInMs >= 0 ? retryInMs : null,
  };
  const snoozeMs = read(err, 'snoozeMs');
  if (typeof snoozeMs === 'number' && Number.isFinite(snoozeMs) && snoozeMs >= 0) out.snoozeMs = snoozeMs;
  if (typeof stack === 'string') {
    const frames = stackFrames(stack);
    if (frames !== '') out.stack = frames;
  }
  return out;
}

/**
 * The frame lines of a stack (`at …`), at most MAX_STACK characters, cut at a
 * frame. The header (`Name: message`, over several lines for a multi-line
 * message) is left out: the message is recorded on its own, and a stack then
 * holds code locations only, never more of the error's text than the message
 * shows. A stack with no frame line (set by hand) gives ''.
 */
export function stackFrames(stack: string): string {
  let out = '';
  for (const line of stack.split('\n')) {
    if (!FRAME.test(line)) continue;
    const frame = line.trim();
    if (out.length + frame.length + 1 > MAX_STACK) break;
    out = out === '' ? frame : `${out}\n${frame}`;
  }
  return out;
}

/** A property, or undefined when reading it throws. */
function read(obj: object, key: string): unknown {
  try {
    return (obj as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/** A string for a name or message field: strings as they are, other primitives converted, the rest undefined. */
function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'object' || typeof value === 'function') return describe(value);
  return safeString(value);
}

/** Best-effort one-line description of any value; never throws. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return clip(value, MAX_MESSAGE);
  try {
    const json = JSON.stringify(value);
    if (typeof json === 'string') return clip(json, MAX_MESSAGE);
  } catch {
    // BigInt, cycles, throwing toJSON or getters: fall through.
  }
  return clip(safeString(value), MAX_MESSAGE);
}

function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return '[unprintable value]';
    }
  }
}

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
