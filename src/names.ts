/**
 * The names a job carries, stated once: kinds and queue names become file
 * names, label values and configuration keys, so they are plain identifiers.
 * Config, queue, worker and metrics derive their checks from these patterns.
 */
import { InputError } from './errors.ts';

/** A kind (or another plain name): 1-200 letters, digits and _ . : -, not starting with . : -. */
const NAME_SOURCE = '[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}';
export const NAME = new RegExp(`^${NAME_SOURCE}$`);
/** Queue names also name configuration keys, where a dot would read as a path: no dots. */
export const QUEUE = /^[A-Za-z0-9_][A-Za-z0-9_:-]{0,199}$/;
/** A task file's name: a kind and a module extension; group 1 is the kind. */
export const TASK_FILE = new RegExp(`^(${NAME_SOURCE})\\.(?:js|mjs|ts)$`);

/** @throws InputError when `value` is not 1-200 letters, digits, _ . : - (not starting with . : -). */
export function checkName(field: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw new InputError(
      `${field} ${shown(value)} is not valid: use 1-200 letters, digits and _ . : - (starting with a letter, digit or _)`,
    );
  }
}

/** @throws InputError when `value` is not 1-200 letters, digits, _ : - (not starting with : -). */
export function checkQueue(field: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !QUEUE.test(value)) {
    throw new InputError(
      `${field} ${shown(value)} is not valid: use 1-200 letters, digits and _ : - (starting with a letter, digit or _; no dots)`,
    );
  }
}

function shown(value: unknown): string {
  return typeof value === 'string'
    ? JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)
    : typeof value;
}
