/**
 * Hostile values for fuzzing: random, from a seeded PRNG (see measure.ts), so
 * a failing case is replayed by its seed. Each generator mixes values that
 * must be accepted (odd but legal data) with values that must be refused.
 */

export type Random = () => number;

export function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

export function int(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** Strings that break naive code: SQL and shell metacharacters, escapes, control characters, odd Unicode. */
export const NASTY_STRINGS = [
  '',
  ' ',
  "'",
  '"',
  '\\',
  '\\\\',
  "'; DROP TABLE jobvisor.jobs; --",
  '" OR 1=1 --',
  '$1',
  '$$',
  '%s%s%n',
  '${process.exit()}',
  '`rm -rf /`',
  '\t',
  '\n',
  '\r\n',
  '\\N',
  '\\.',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\ufffd',
  'é',
  '漢字',
  '🚀',
  '👩‍👩‍👧‍👦',
  'a'.repeat(1000),
  'a'.repeat(1001),
  '-x',
  '.x',
  ':x',
  'x y',
  'x/y',
  '../../etc/passwd',
  '__proto__',
  'constructor',
  'toString',
  'null',
  'undefined',
  'NaN',
  'true',
  '0',
  '-0',
  '1e400',
];

/** Strings PostgreSQL cannot store in text/jsonb (or that are not valid Unicode): must be refused. */
export const UNSTORABLE_STRINGS = ['\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\udbff\udbff'];

function randomChar(random: Random): string {
  const r = random();
  if (r < 0.5) return String.fromCharCode(int(random, 0x20, 0x7e));
  if (r < 0.6) return String.fromCharCode(int(random, 1, 0x1f));
  if (r < 0.8) return String.fromCodePoint(int(random, 0xa0, 0xd7ff));
  if (r < 0.95) return String.fromCodePoint(int(random, 0x10000, 0x10ffff));
  return String.fromCodePoint(int(random, 0xe000, 0xfffd));
}

/** A random string; with `unstorable`, sometimes one PostgreSQL must refuse. */
export function randomString(random: Random, unstorable = false): string {
  const r = random();
  if (unstorable && r < 0.05) return pick(random, UNSTORABLE_STRINGS);
  if (r < 0.35) return pick(random, NASTY_STRINGS);
  let s = '';
  const n = int(random, 0, 24);
  for (let i = 0; i < n; i++) s += randomChar(random);
  return s;
}

export const NASTY_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  1e308,
  -1e308,
  5e-324,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 63),
  Number('123456789.123456789'), // more digits than a double holds
  1e21,
  1e-7,
];

/** A JSON-ish value: objects, arrays, strings, numbers, booleans, null; `depth` bounds nesting. */
export function randomJson(random: Random, depth: number, unstorable = false): unknown {
  const r = random();
  if (depth <= 0 || r < 0.3) {
    const leaf = random();
    if (leaf < 0.4) return randomString(random, unstorable);
    if (leaf < 0.7) return pick(random, NASTY_NUMBERS);
    if (leaf < 0.85) return random() < 0.5;
    return null;
  }
  if (r < 0.6) {
    const out: Record<string, unknown> = {};
    const n = int(random, 0, 6);
    // Own properties, as JSON.parse makes them: a "__proto__" key is data, not the object's prototype.
    for (let i = 0; i < n; i++)
      Object.defineProperty(out, randomString(random, unstorable), {
        value: randomJson(random, depth - 1, unstorable),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return out;
  }
  return Array.from({ length: int(random, 0, 6) }, () => randomJson(random, depth - 1, unstorable));
}

/** Nested arrays `levels` deep: [[[…]]]. */
export function nested(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

/** Values that are not JSON at all (must be refused, never silently mangled into something else). */
export function notJson(random: Random): unknown {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  return pick(random, [
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    10n,
    Symbol('s'),
    () => 1,
    cyclic,
    { n: Number.NaN },
    [Number.POSITIVE_INFINITY],
    { deep: { big: 1n } },
    nested(5000),
  ]);
}
