/**
 * Checks of configuration values: formats the schema uses, the `queues` and
 * `schedules` sections (convict cannot describe maps or lists of objects), and
 * the strict key check that names the nearest valid key.
 */
import convict from 'convict';
import { parseDuration } from '../duration.ts';
import { ConfigError, messageOf } from '../errors.ts';
import { QUEUE as QUEUE_NAME } from '../names.ts';
import { closestKey } from '../suggest.ts';
import { cronProblem } from './cron.ts';

/** The longest delay a Node timer holds (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/** Keys a plain object cannot hold as data: a queue with such a name would vanish or poison the map. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export function durationFormat(value: unknown): void {
  if (typeof value !== 'string' && typeof value !== 'number')
    throw new Error('must be a duration such as "30s" or "5m"');
  parseDuration(value);
}

/**
 * A duration that drives a timer: at most MAX_TIMER_MS, and at least `minMs`
 * where a shorter one would turn a loop into a busy loop against the database
 * (measured: "0ms" or "30d" for poll/reaper/cleanup/scheduler intervals is
 * ~2,300 transactions per second from one idle supervisor instead of ~5).
 */
export function timerFormat(minMs: number) {
  return (value: unknown): void => {
    durationFormat(value);
    const ms = parseDuration(value as string | number);
    if (ms < minMs || ms > MAX_TIMER_MS) throw new Error(`must be from ${minMs} ms to 24d (it sets a timer)`);
  };
}

export function intIn(min: number, max: number) {
  return (value: unknown): void => {
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
      throw new Error(`must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
  };
}

/**
 * The name of a convict format for a count of bytes of JSON (2 B to 100 MiB).
 * A key whose format is a function and whose default is a number has its string
 * values converted by convict with parseFloat, so "64KiB" in a config file read
 * as 64 bytes. This format converts only a string of digits (an environment
 * variable) and leaves anything else for the check to refuse, naming the key.
 */
export const BYTE_COUNT = 'jobvisor-byte-count';
convict.addFormat({
  name: BYTE_COUNT,
  validate: intIn(2, 100 * 1024 * 1024),
  coerce: (v: unknown) => (typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v),
});

/** What a queue may set, and how each value is checked. */
export const QUEUE_FIELDS = {
  concurrency: intIn(1, 10_000),
  jobsPerThread: intIn(1, 1000),
  prefetch: intIn(0, 10_000),
  timeout: (v: unknown) => (v === null ? undefined : durationFormat(v)),
  globalConcurrency: nullOr(intIn(1, 1_000_000)),
  perKeyConcurrency: nullOr(intIn(1, 1_000_000)),
} as const;

/**
 * Limits under which a claimed job holds a queue-wide slot or start, so none
 * are claimed ahead (config/sections.ts claimsAhead; per-key limits alone allow it).
 */
const QUEUE_WIDE_LIMITS = ['globalConcurrency', 'rateLimit'] as const;

function nullOr(check: (v: unknown) => void) {
  return (v: unknown): void => (v === null ? undefined : check(v));
}

/** `{ count, period, perKey? }` (or null): at most count starts in any window of period. */
function checkRateLimit(where: string, value: unknown): void {
  if (value === null || value === undefined) return;
  if (!isPlainObject(value)) throw new Error(`${where} must be an object such as { "count": 100, "period": "1s" }`);
  checkKeys(where, value, RATE_LIMIT_KEYS);
  if (value.count === undefined) throw new Error(`${where}.count is missing`);
  guard(`${where}.count`, () => intIn(1, 1_000_000)(value.count));
  if (value.period === undefined) throw new Error(`${where}.period is missing (a duration such as "1s")`);
  guard(`${where}.period`, () => timerFormat(1)(value.period));
  if (value.perKey !== undefined && typeof value.perKey !== 'boolean')
    throw new Error(`${where}.perKey must be true or false, got ${JSON.stringify(value.perKey)}`);
}
const RATE_LIMIT_KEYS = ['count', 'period', 'perKey'];
const QUEUE_KEYS = [...Object.keys(QUEUE_FIELDS), 'rateLimit', 'keyWeights'];

/**
 * `{ "tenant:a": 3, "*": 1 }` (or null): each concurrency key's weight in a
 * per-key claim, `"*"` every key not named. Weights are numbers from 0.01 to
 * 1,000; they need a per-key limit, since only a per-key claim reads them.
 */
function checkKeyWeights(where: string, value: unknown, q: Record<string, unknown>): void {
  if (value === null || value === undefined) return;
  if (!isPlainObject(value)) throw new Error(`${where} must be an object of key → weight, such as { "tenant:a": 3 }`);
  for (const [key, weight] of Object.entries(value))
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0.01 || weight > 1000)
      throw new Error(`${where}.${key} must be a number from 0.01 to 1000, got ${JSON.stringify(weight)}`);
  const rate = q.rateLimit as { perKey?: unknown } | null | undefined;
  if ((q.perKeyConcurrency === undefined || q.perKeyConcurrency === null) && rate?.perKey !== true)
    throw new Error(`${where} needs perKeyConcurrency or rateLimit.perKey: only a per-key claim weighs keys`);
}
const SCHEDULE_KEYS = ['name', 'cron', 'kind', 'payload', 'queue', 'priority', 'timezone'] as const;

function checkKeys(where: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      const near = closestKey(key, allowed);
      throw new Error(`unknown key "${where}.${key}"${near ? ` (did you mean "${where}.${near}"?)` : ''}`);
    }
  }
}

export function checkQueueName(name: string, where = 'queue name'): void {
  if (RESERVED_KEYS.has(name))
    throw new Error(`${where} ${JSON.stringify(name)} is reserved (a JavaScript object property): choose another name`);
  if (!QUEUE_NAME.test(name))
    throw new Error(
      `${where} ${JSON.stringify(name)} must be 1-200 letters, digits and _ : - (starting with a letter, digit or _; no dots)`,
    );
}

export function validateQueues(value: unknown): void {
  if (!isPlainObject(value)) throw new Error('queues must be an object of queue name → settings');
  for (const [name, q] of Object.entries(value)) {
    checkQueueName(name);
    if (!isPlainObject(q)) throw new Error(`queues.${name} must be an object`);
    checkKeys(`queues.${name}`, q, QUEUE_KEYS);
    for (const [key, check] of Object.entries(QUEUE_FIELDS))
      if (q[key] !== undefined) guard(`queues.${name}.${key}`, () => check(q[key]));
    checkRateLimit(`queues.${name}.rateLimit`, q.rateLimit);
    checkKeyWeights(`queues.${name}.keyWeights`, q.keyWeights, q);
    const limit = QUEUE_WIDE_LIMITS.find((k) => q[k] !== undefined && q[k] !== null);
    if (limit && typeof q.prefetch === 'number' && q.prefetch > 0)
      throw new Error(
        `queues.${name}.prefetch must be 0 (or unset) when queues.${name}.${limit} is set: a job claimed ahead holds a cluster-wide slot while it waits`,
      );
  }
}

export function validateSchedules(value: unknown): void {
  if (!Array.isArray(value)) throw new Error('must be a list of { name, cron, kind, payload, queue }');
  const names = new Set<string>();
  value.forEach((s: unknown, i: number) => {
    const where = `schedules[${i}]`;
    if (!isPlainObject(s)) throw new Error(`${where} must be an object`);
    checkKeys(where, s, SCHEDULE_KEYS);
    for (const key of ['name', 'cron', 'kind'] as const) {
      if (typeof s[key] !== 'string' || s[key].length === 0)
        throw new Error(`${where}.${key} must be a non-empty string`);
    }
    const { name, cron, timezone } = s as { name: string; cron: string; timezone?: unknown };
    if (names.has(name)) throw new Error(`${where}.name "${name}" is used twice`);
    names.add(name);
    if (s.payload !== undefined && !isPlainObject(s.payload)) throw new Error(`${where}.payload must be a JSON object`);
    if (s.queue !== undefined) {
      if (typeof s.queue !== 'string') throw new Error(`${where}.queue must be a queue name`);
      checkQueueName(s.queue, `${where}.queue`);
    }
    if (s.priority !== undefined) guard(`${where}.priority`, () => intIn(-1_000_000, 1_000_000)(s.priority));
    const problem = cronProblem(cron, typeof timezone === 'string' ? timezone : null);
    if (problem !== undefined) throw new Error(`${where}.cron ${problem}`);
  });
}

function guard(where: string, check: () => void): void {
  try {
    check();
  } catch (err) {
    throw new Error(`${where} ${messageOf(err)}`, { cause: err });
  }
}

/** No value may hold NUL: no PostgreSQL text, file name or host name can (supervisor.name becomes locked_by). */
export function checkNoNul(value: unknown, where: string): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000'))
      throw new ConfigError(`invalid configuration: ${where} contains a NUL character (\\u0000)`);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => checkNoNul(v, `${where}[${i}]`));
  } else if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) checkNoNul(v, where ? `${where}.${k}` : k);
  }
}

/** A schema node whose `default` makes it a value rather than a section. */
export function isLeaf(spec: unknown): spec is { default: unknown; duration?: true } {
  return isPlainObject(spec) && 'default' in spec;
}

/** Every value key of the schema, dotted. */
export function allKeys(node: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(node).flatMap(([key, spec]) => {
    const here = prefix ? `${prefix}.${key}` : key;
    return isPlainObject(spec) && !isLeaf(spec) ? allKeys(spec, here) : [here];
  });
}

/** Every key in the files must exist in the schema (convict misses empty objects); boolean and list keys hold booleans and lists. */
export function checkUnknownKeys(value: Record<string, unknown>, schema: Record<string, unknown>): void {
  const walk = (v: Record<string, unknown>, node: Record<string, unknown>, prefix: string): void => {
    for (const [key, child] of Object.entries(v)) {
      const here = prefix ? `${prefix}.${key}` : key;
      const spec = Object.hasOwn(node, key) ? node[key] : undefined;
      if (!isPlainObject(spec)) {
        const near = closestKey(here, allKeys(schema).concat(Object.keys(schema)));
        throw new ConfigError(
          `invalid configuration: unknown key ${JSON.stringify(here)}${near ? ` (did you mean "${near}"?)` : ''}`,
        );
      }
      // convict would coerce "yes" into true, or parse a string as a list: refuse instead, naming the key.
      if (isLeaf(spec) && typeof spec.default === 'boolean' && typeof child !== 'boolean')
        throw new ConfigError(`invalid configuration: ${here} must be true or false, got ${JSON.stringify(child)}`);
      if (isLeaf(spec) && Array.isArray(spec.default) && !Array.isArray(child))
        throw new ConfigError(`invalid configuration: ${here} must be a list, got ${JSON.stringify(child)}`);
      if (!isLeaf(spec) && isPlainObject(child)) walk(child, spec, here);
    }
  };
  walk(value, schema, '');
}

/** Refuses keys that a plain object cannot hold as data (they would be dropped silently). */
export function checkReservedKeys(value: unknown, where: string): void {
  if (Array.isArray(value)) value.forEach((v, i) => checkReservedKeys(v, `${where}[${i}]`));
  if (!isPlainObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    if (RESERVED_KEYS.has(key)) {
      if (where === 'queues') throw new ConfigError(`invalid configuration: ${reservedQueue(key)}`);
      throw new ConfigError(
        `invalid configuration: key ${JSON.stringify(where ? `${where}.${key}` : key)} is reserved`,
      );
    }
    checkReservedKeys(child, where ? `${where}.${key}` : key);
  }
}

function reservedQueue(name: string): string {
  try {
    checkQueueName(name);
  } catch (err) {
    return messageOf(err);
  }
  return `queue name ${JSON.stringify(name)} is reserved`;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
