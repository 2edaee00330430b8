/**
 * Redaction of a folded JSON text: a step's result as `stepsOf` reads it, the
 * first FOLDED_RESULT_CHARS characters of its JSON then `…` when it was
 * longer. A cut text cannot be parsed, so it is scanned instead: every value
 * under a key named in `dashboard.redact` (compared without case, at any
 * depth, the keys of objects inside arrays too, as redactPayload does for a
 * payload) is replaced by "[redacted]", a value the cut left unfinished
 * included. The scan only copies or drops characters of the text it was
 * given: it never shows more than the text holds.
 */
import { REDACTED } from '../secrets.ts';

const SHOWN = JSON.stringify(REDACTED);
const FOLD = '…';

/** `text` (JSON, whole or cut, maybe ending with `…`) with the values of secret keys replaced. Pure. */
export function redactFoldedJson(text: string, keys: readonly string[]): string {
  const names = new Set(keys.map((k) => k.toLowerCase()));
  const folded = text.endsWith(FOLD);
  const s = folded ? text.slice(0, -FOLD.length) : text;
  const open: string[] = [];
  let out = '';
  let expectKey = false;
  let secret = false;
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c === '"') {
      const end = stringEnd(s, i);
      const token = s.slice(i, end);
      if (expectKey && open.at(-1) === '{') {
        secret = names.has(keyOf(token).toLowerCase());
        expectKey = false;
      }
      out += token;
      i = end;
      continue;
    }
    out += c;
    i++;
    if (c === '{' || c === '[') {
      open.push(c);
      expectKey = c === '{';
    } else if (c === '}' || c === ']') {
      open.pop();
    } else if (c === ',') {
      expectKey = open.at(-1) === '{';
    } else if (c === ':' && secret) {
      secret = false;
      i = valueEnd(s, i);
      out += SHOWN;
    }
  }
  return folded ? out + FOLD : out;
}

/** The key a string token names (its raw text when the cut left it unreadable). */
function keyOf(token: string): string {
  try {
    return JSON.parse(token) as string;
  } catch {
    return token.slice(1);
  }
}

/** The index just past the string starting at `i` (the text's end when it was cut). */
function stringEnd(s: string, i: number): number {
  let j = i + 1;
  while (j < s.length) {
    if (s[j] === '\\') j += 2;
    else if (s[j] === '"') return j + 1;
    else j++;
  }
  return s.length;
}

/** The index just past the value starting after index `i` (whitespace first), or the text's end. */
function valueEnd(s: string, i: number): number {
  let j = i;
  while (j < s.length && /\s/.test(s[j] as string)) j++;
  if (j >= s.length) return j;
  if (s[j] === '"') return stringEnd(s, j);
  if (s[j] === '{' || s[j] === '[') {
    let depth = 0;
    while (j < s.length) {
      const c = s[j];
      if (c === '"') {
        j = stringEnd(s, j);
        continue;
      }
      if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') depth--;
      j++;
      if (depth === 0) return j;
    }
    return j;
  }
  while (j < s.length && !/[,}\]\s]/.test(s[j] as string)) j++;
  return j;
}
