/** last_error text as the completer writes it. */
import { messageOf } from '../../errors.ts';

const MAX_ERROR_CHARS = 4000;

/** Bounded, and without NUL (PostgreSQL text cannot hold it). */
export function clean(error: string): string {
  const text = error.replaceAll('\u0000', '\\0');
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}… (truncated)` : text;
}

/** A short message of a write's error, for the last_error of a row dead-lettered alone. */
export function shortMessageOf(err: unknown): string {
  return messageOf(err).slice(0, 500);
}
