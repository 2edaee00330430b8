/**
 * Queues in the configuration: one set of defaults, one name pattern shared with
 * enqueue, reserved names refused, and `concurrency` that takes effect
 * (effectiveQueueLimits, a pure function).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { effectiveQueueLimits, loadConfig, QUEUE_DEFAULTS } from '../../src/config/index.ts';
import { defaultPrefetch } from '../../src/config/limits.ts';
import { schema } from '../../src/config/schema.ts';
import { ConfigError } from '../../src/errors.ts';
import { checkQueue } from '../../src/names.ts';

const emptyDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-config-'));
after(() => rmSync(emptyDir, { recursive: true, force: true }));

function load(overrides: Record<string, unknown>) {
  return loadConfig({ configDir: emptyDir, env: {}, overrides });
}

describe('effectiveQueueLimits', () => {
  it('lets a queue that sets only concurrency share one thread, so all of it runs', () => {
    const r = effectiveQueueLimits({ pool: { maxThreads: 2 }, queues: { default: { concurrency: 50 } } });
    assert.equal(r.queues.default?.jobsPerThread, 50);
    assert.equal(r.limits.default, 50);
    assert.deepEqual(r.warnings, []);
    const odd = effectiveQueueLimits({ pool: { maxThreads: 4 }, queues: { q: { concurrency: 9 } } });
    assert.equal(odd.queues.q?.jobsPerThread, 9);
    assert.equal(odd.limits.q, 9);
    const one = effectiveQueueLimits({ pool: { maxThreads: 4 }, queues: { q: { concurrency: 1 } } });
    assert.equal(one.queues.q?.jobsPerThread, 1);
    assert.equal(one.queues.q?.prefetch, 0, 'a job per thread claims nothing ahead');
  });

  it('says in one line when explicit settings cannot reach concurrency, naming the limit and the key', () => {
    const r = effectiveQueueLimits({
      pool: { maxThreads: 2 },
      queues: { default: { concurrency: 50, jobsPerThread: 10 }, cpu: { concurrency: 2, jobsPerThread: 1 } },
    });
    assert.equal(r.limits.default, 20);
    assert.equal(r.limits.cpu, 2);
    assert.equal(r.warnings.length, 1);
    const [line] = r.warnings as [string];
    assert.doesNotMatch(line, /\n/);
    assert.match(line, /queues\.default\.concurrency is 50, but at most 20/);
    assert.match(line, /queues\.default\.jobsPerThread to 25/);
    assert.match(line, /pool\.maxThreads/);
  });

  it('says so in one line when globalConcurrency caps a queue below its concurrency', () => {
    const r = effectiveQueueLimits({
      pool: { maxThreads: 2 },
      queues: {
        payments: { concurrency: 50, globalConcurrency: 5 },
        equal: { concurrency: 5, globalConcurrency: 5 },
        above: { concurrency: 5, globalConcurrency: 20 },
      },
    });
    assert.equal(r.warnings.length, 1);
    const [line] = r.warnings as [string];
    assert.doesNotMatch(line, /\n/);
    assert.match(line, /queues\.payments\.concurrency is 50, but queues\.payments\.globalConcurrency lets at most 5/);
    assert.match(line, /lower concurrency to 5/);
  });

  it('gives every queue the same defaults', () => {
    const r = effectiveQueueLimits({ pool: { maxThreads: 3 }, queues: { default: {}, other: {} } });
    assert.deepEqual(r.queues.default, r.queues.other);
    assert.equal(r.queues.other?.concurrency, QUEUE_DEFAULTS.concurrency);
    assert.equal(r.queues.other?.prefetch, defaultPrefetch(QUEUE_DEFAULTS.concurrency, r.queues.other.jobsPerThread));
    assert.equal(r.queues.other?.timeout, null);
  });

  it('claims ahead for queues that share threads, not for a thread per job', () => {
    assert.equal(defaultPrefetch(50, 25), 2000);
    assert.equal(defaultPrefetch(100, 50), 2000);
    assert.equal(defaultPrefetch(10, 5), 400);
    assert.equal(defaultPrefetch(2, 1), 0);
    const r = effectiveQueueLimits({
      pool: { maxThreads: 2 },
      queues: { mail: { concurrency: 50 }, cpu: { concurrency: 2, jobsPerThread: 1 } },
    });
    assert.equal(r.queues.mail?.prefetch, 2000);
    assert.equal(r.queues.cpu?.prefetch, 0);
  });
});

describe('queues in the configuration', () => {
  it('a queue with only concurrency gets it, whatever its name', () => {
    const s = load({ pool: { maxThreads: 2 }, queues: { default: { concurrency: 50 }, mail: { concurrency: 50 } } });
    assert.equal(s.queues.default?.jobsPerThread, 50);
    assert.deepEqual(s.queues.mail, s.queues.default);
  });

  it('accepts exactly the queue names enqueue accepts', () => {
    for (const name of ['-x', ':x', 'a.b', 'ok-1', '_x', 'a:b', 'x'.repeat(200), 'x'.repeat(201)]) {
      let enqueueOk = true;
      try {
        checkQueue('queue', name);
      } catch {
        enqueueOk = false;
      }
      let configOk = true;
      try {
        load({ queues: { [name]: {} } });
      } catch (err) {
        assert.ok(err instanceof ConfigError, String(err));
        configOk = false;
      }
      assert.equal(configOk, enqueueOk, `queue name ${JSON.stringify(name)}`);
    }
  });

  it('refuses queues named like object properties instead of dropping them', () => {
    for (const name of ['constructor', '__proto__', 'prototype']) {
      const overrides = JSON.parse(`{"queues": {"${name}": {"concurrency": 3}}}`) as Record<string, unknown>;
      assert.throws(
        () => load(overrides),
        (err: unknown) =>
          err instanceof ConfigError && new RegExp(`queue name "${name}" is reserved`).test(err.message),
        name,
      );
    }
    assert.throws(
      () => load(JSON.parse('{"__proto__": {"x": 1}}') as Record<string, unknown>),
      /"__proto__" is reserved/,
    );
  });

  it('turns every key tagged duration in the schema into milliseconds', () => {
    const s = load({}) as unknown as Record<string, Record<string, unknown>>;
    let count = 0;
    for (const [section, node] of Object.entries(schema)) {
      for (const [key, spec] of Object.entries(node)) {
        if ((spec as { duration?: boolean }).duration) {
          count++;
          assert.equal(typeof s[section]?.[key], 'number', `${section}.${key}`);
        }
      }
    }
    assert.ok(count >= 15, `${count} duration keys`);
  });
});
