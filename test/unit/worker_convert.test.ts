/**
 * Pure decisions of the worker thread: error conversion is total, payload
 * integers beyond 2^53 are refused with their path, and escaped errors are
 * blamed on the right job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toTaskError } from '../../src/worker/convert.ts';
import { culprit, escapeError, type EscapableJob } from '../../src/worker/escapes.ts';
import { PayloadError, parsePayload, pathOfNumber } from '../../src/worker/payload.ts';

function hostileProxy(target: object = new Error('inner')): unknown {
  const trap = () => {
    throw new Error('proxy trap');
  };
  return new Proxy(target, {
    get: trap,
    getPrototypeOf: trap,
    has: trap,
    ownKeys: trap,
    getOwnPropertyDescriptor: trap,
    defineProperty: trap,
    set: trap,
    deleteProperty: trap,
    isExtensible: trap,
    preventExtensions: trap,
    setPrototypeOf: trap,
  });
}

function throwingGetters(): Error {
  const e = new Error('getter');
  for (const key of ['stack', 'message', 'name', 'permanent', 'retryInMs'])
    Object.defineProperty(e, key, {
      get() {
        throw new Error('getter trap');
      },
    });
  return e;
}

const ODD: Array<[string, () => unknown]> = [
  ['Symbol message', () => Object.assign(new Error('x'), { message: Symbol('sym') })],
  ['numeric stack', () => Object.assign(new Error('numeric stack'), { stack: 42 })],
  ['throwing getters', throwingGetters],
  ['Proxy throwing on every trap', () => hostileProxy()],
  ['Proxy of a plain object', () => hostileProxy({})],
  ['null', () => null],
  ['undefined', () => undefined],
  ['a Symbol', () => Symbol('thrown')],
  ['a BigInt', () => 10n ** 30n],
  [
    'toString and toJSON throwing',
    () => ({
      toString() {
        throw new Error('no');
      },
      toJSON() {
        throw new Error('no');
      },
    }),
  ],
  ['object with null prototype', () => Object.create(null) as unknown],
  [
    'cyclic object',
    () => {
      const o: Record<string, unknown> = {};
      o.self = o;
      return o;
    },
  ],
  ['message of a million characters', () => new Error('m'.repeat(1_000_000))],
  ['name that is an object', () => Object.assign(new Error('n'), { name: { toString: () => 'Named' } })],
];

describe('toTaskError is total', () => {
  for (const [what, make] of ODD) {
    it(`converts ${what} without throwing`, () => {
      const e = toTaskError(make());
      assert.equal(typeof e.name, 'string');
      assert.equal(typeof e.message, 'string');
      assert.ok(e.stack === undefined || typeof e.stack === 'string');
      assert.equal(typeof e.permanent, 'boolean');
      assert.ok(e.retryInMs === null || Number.isFinite(e.retryInMs));
      assert.ok(e.message.length <= 2001, 'message is bounded');
      assert.doesNotThrow(() => structuredClone(e), 'crosses the thread boundary');
    });
  }

  it('keeps what a well-formed error says', () => {
    const e = toTaskError(Object.assign(new RangeError('bad'), { permanent: true, retryInMs: 5 }));
    assert.deepEqual(
      { ...e, stack: undefined },
      {
        name: 'RangeError',
        message: 'bad',
        stack: undefined,
        permanent: true,
        retryInMs: 5,
      },
    );
    // Frame lines only: the header repeats the message, recorded on its own.
    assert.match(e.stack ?? '', /^at .*worker_convert\.test\.ts:\d+:\d+\)?\n/);
    assert.doesNotMatch(e.stack ?? '', /RangeError: bad/);
  });

  it('describes non-Error values', () => {
    assert.equal(toTaskError('oops').message, 'task threw a non-Error value: oops');
    assert.equal(toTaskError({ a: 1 }).message, 'task threw a non-Error value: {"a":1}');
    assert.equal(toTaskError(null).message, 'task threw a non-Error value: null');
    assert.equal(toTaskError(Symbol('s')).message, 'task threw a non-Error value: Symbol(s)');
    assert.equal(toTaskError(Object.assign(new Error('x'), { message: Symbol('sym') })).message, 'Symbol(sym)');
  });

  it('ignores a retryInMs that is not a finite number >= 0', () => {
    for (const retryInMs of [-1, Infinity, NaN, '5', 10n])
      assert.equal(toTaskError(Object.assign(new Error('x'), { retryInMs })).retryInMs, null);
  });
});

describe('parsePayload', () => {
  it('refuses an integer that JavaScript would read as another number, and names its path', () => {
    for (const [text, path] of [
      ['{"id": 9007199254740993}', 'payload.id'],
      ['{"id": -9007199254740993}', 'payload.id'],
      ['[1, {"order": {"ids": [2, 12345678901234567890]}}]', 'payload[1].order.ids[1]'],
      ['{"a b": 100000000000000000001}', 'payload["a b"]'],
      ['{"s": "9007199254740993 in a string is fine", "n": 9007199254740995}', 'payload.n'],
      ['18446744073709551615', 'payload'],
    ] as const) {
      assert.throws(
        () => parsePayload(text),
        (err: unknown) =>
          err instanceof PayloadError &&
          err.permanent &&
          err.code === 'payload_unsafe_integer' &&
          err.message.startsWith(`${path} is an integer beyond 2^53 - 1`),
        text,
      );
    }
  });

  it('passes safe integers, floats and long digit strings', () => {
    assert.deepEqual(parsePayload('{"id": 9007199254740991, "n": -9007199254740991}'), {
      id: 9007199254740991,
      n: -9007199254740991,
    });
    assert.deepEqual(parsePayload('{"id": "9007199254740993", "x": 1.5}'), { id: '9007199254740993', x: 1.5 });
    assert.deepEqual(parsePayload('{"pi": 3.1415926535897932384}'), { pi: 3.141592653589793 });
  });

  it('passes large numbers that a JavaScript producer wrote: jsonb prints them in full, exactly', () => {
    // 2^53 itself, 1e20, 1e300 and the largest double, as PostgreSQL prints what
    // JSON.stringify sent ("1e+300" is stored as the decimal 10^300, printed in full).
    const exact = [2 ** 53, 1e20, 1e300, Number.MAX_VALUE, -1.2345e25];
    for (const n of exact) {
      const [mantissa, exponent] = JSON.stringify(n).split('e') as [string, string | undefined];
      const [whole, fraction = ''] = mantissa.split('.') as [string, string | undefined];
      const printed = exponent ? whole + fraction + '0'.repeat(Number(exponent) - fraction.length) : mantissa;
      assert.deepEqual(parsePayload(`{"n": ${printed}}`), { n }, printed);
    }
  });

  it('refuses text that is not JSON, permanently', () => {
    assert.throws(
      () => parsePayload('{'),
      (err: unknown) => err instanceof PayloadError && err.permanent && err.code === 'payload_invalid_json',
    );
  });

  it('walks any depth without recursion', () => {
    const deep = `${'['.repeat(50_000)}9007199254740993${']'.repeat(50_000)}`;
    assert.match(pathOfNumber(JSON.parse(deep), 9007199254740992)?.path ?? '', /^payload(\[0\]){50000}$/);
  });
});

describe('escaped errors', () => {
  const job = (id: string): EscapableJob => ({ id, fail: () => true });

  it('are blamed on the job in whose context they were raised, else on the only job in flight', () => {
    const a = job('1');
    const b = job('2');
    assert.equal(culprit(a, [a, b]), a);
    assert.equal(culprit(undefined, [b]), b);
    assert.equal(culprit(undefined, [a, b]), undefined);
    assert.equal(culprit(undefined, []), undefined);
  });

  it('say what escaped, keeping the error they came from', () => {
    const e = escapeError('UnhandledRejection', new TypeError('nope'));
    assert.equal(e.name, 'UnhandledRejection');
    assert.match(e.message, /^a promise rejected with no handler .*: TypeError: nope$/);
    assert.equal(escapeError('UncaughtException', hostileProxy()).name, 'UncaughtException');
  });
});
