/**
 * Flow-control keys of a queue: loaded with durations in ms, absent when
 * unset (an unlimited queue's settings are what they always were), no
 * prefetch for a queue limited queue-wide (a queue limited per key alone keeps
 * it), and every bad value refused with its key named.
 * Also the enqueue option concurrencyKey.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { isLimited } from '../../src/config/sections.ts';
import { validateJob } from '../../src/queue/enqueue.ts';
import { InputError } from '../../src/errors.ts';

const emptyDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-config-'));
after(() => rmSync(emptyDir, { recursive: true, force: true }));

function load(queues: Record<string, unknown>) {
  return loadConfig({ configDir: emptyDir, env: {}, overrides: { queues } });
}

describe('flow-control configuration', () => {
  it('loads the limits, with the period in ms, and no prefetch for a limited queue', () => {
    const s = load({
      api: { concurrency: 20, jobsPerThread: 20, rateLimit: { count: 100, period: '1s' } },
      crm: { concurrency: 10, perKeyConcurrency: 1, globalConcurrency: 4 },
      keyed: { rateLimit: { count: 5, period: '1m', perKey: true } },
      plain: { concurrency: 20, jobsPerThread: 20 },
    });
    assert.deepEqual(s.queues.api?.rateLimit, { count: 100, periodMs: 1000, perKey: false });
    assert.equal(s.queues.api?.prefetch, 0);
    assert.equal(s.queues.crm?.perKeyConcurrency, 1);
    assert.equal(s.queues.crm?.globalConcurrency, 4);
    assert.deepEqual(s.queues.keyed?.rateLimit, { count: 5, periodMs: 60_000, perKey: true });
    assert.equal(s.queues.plain?.prefetch, 800);
    assert.ok(!('rateLimit' in (s.queues.plain ?? {})) && !('globalConcurrency' in (s.queues.plain ?? {})));
    assert.equal(isLimited(s.queues.plain), false);
    assert.equal(isLimited(s.queues.crm), true);
  });

  it('a queue limited per key alone claims ahead (its prefetch as if unlimited, or as set); one with a queue-wide limit does not', () => {
    const s = load({
      keyed: { concurrency: 50, jobsPerThread: 50, perKeyConcurrency: 1 },
      keyedSet: { concurrency: 10, perKeyConcurrency: 2, prefetch: 30 },
      keyedGlobal: { concurrency: 10, perKeyConcurrency: 1, globalConcurrency: 20 },
      keyedRate: { concurrency: 10, rateLimit: { count: 5, period: '1s', perKey: true } },
    });
    assert.equal(s.queues.keyed?.prefetch, 2000);
    assert.equal(s.queues.keyedSet?.prefetch, 30);
    assert.equal(s.queues.keyedGlobal?.prefetch, 0);
    assert.equal(s.queues.keyedRate?.prefetch, 0);
    assert.throws(
      () => load({ q: { perKeyConcurrency: 1, rateLimit: { count: 5, period: '1s' }, prefetch: 5 } }),
      /queues\.q\.prefetch must be 0 .* queues\.q\.rateLimit is set/,
    );
  });

  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['zero', { globalConcurrency: 0 }, /queues\.q\.globalConcurrency must be an integer from 1/],
    ['text', { perKeyConcurrency: '2' }, /queues\.q\.perKeyConcurrency must be an integer/],
    ['not an object', { rateLimit: 100 }, /queues\.q\.rateLimit must be an object/],
    ['no count', { rateLimit: { period: '1s' } }, /queues\.q\.rateLimit\.count is missing/],
    ['no period', { rateLimit: { count: 1 } }, /queues\.q\.rateLimit\.period is missing/],
    ['bad period', { rateLimit: { count: 1, period: 'soon' } }, /queues\.q\.rateLimit\.period/],
    ['zero period', { rateLimit: { count: 1, period: '0s' } }, /queues\.q\.rateLimit\.period must be from 1 ms/],
    ['unknown key', { rateLimit: { count: 1, period: '1s', per: true } }, /unknown key "queues\.q\.rateLimit\.per"/],
    [
      'perKey text',
      { rateLimit: { count: 1, period: '1s', perKey: 'yes' } },
      /queues\.q\.rateLimit\.perKey must be true or false/,
    ],
    [
      'prefetch',
      { globalConcurrency: 2, prefetch: 10 },
      /queues\.q\.prefetch must be 0 .* queues\.q\.globalConcurrency is set/,
    ],
    ['keyWeights not an object', { perKeyConcurrency: 1, keyWeights: 3 }, /queues\.q\.keyWeights must be an object/],
    [
      'a keyWeights weight of 0',
      { perKeyConcurrency: 1, keyWeights: { 'tenant:a': 0 } },
      /queues\.q\.keyWeights\.tenant:a must be a number from 0\.01 to 1000/,
    ],
    [
      'keyWeights without a per-key limit',
      { globalConcurrency: 4, keyWeights: { 'tenant:a': 3 } },
      /queues\.q\.keyWeights needs perKeyConcurrency or rateLimit\.perKey/,
    ],
    [
      'misspelt',
      { globalConcurency: 2 },
      /unknown key "queues\.q\.globalConcurency" \(did you mean "queues\.q\.globalConcurrency"\?\)/,
    ],
  ];
  it('loads keyWeights as given, "*" the weight of every key not named', () => {
    const s = load({ t: { perKeyConcurrency: 2, keyWeights: { 'tenant:a': 3, '*': 0.5 } } });
    assert.deepEqual(s.queues.t?.keyWeights, { 'tenant:a': 3, '*': 0.5 });
  });
  for (const [what, q, message] of bad)
    it(`refuses ${what}, naming the key`, () => {
      assert.throws(() => load({ q }), message);
    });
});

describe('enqueue option concurrencyKey', () => {
  it('takes 1 to 1000 characters of text and refuses anything else', () => {
    validateJob('k', {}, { concurrencyKey: 'customer:42' });
    for (const key of ['', 'x'.repeat(1001), 'a\u0000b', 42])
      assert.throws(
        () => validateJob('k', {}, { concurrencyKey: key as string }),
        (err: unknown) => {
          assert.ok(err instanceof InputError);
          assert.match((err as Error).message, /concurrencyKey/);
          return true;
        },
      );
  });
});
