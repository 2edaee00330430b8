/**
 * The pure parts of batch tasks, without threads or a database: the check of
 * the `batch` option, what a call's answer means per job, the batch key of a
 * payload, a call's size in its queue, and the batch metrics fed by
 * `batch:called`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { observeEvents } from '../../src/metrics/observe.ts';
import { batchKeyOf } from '../../src/supervisor/dispatch/batch_key.ts';
import { batchSize } from '../../src/supervisor/dispatch/batch_gather.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';
import { readAnswer } from '../../src/worker/batch_answer.ts';
import { parseBatchOptions } from '../../src/worker/batch_options.ts';
import { PermanentError, RetryLaterError, SnoozeError } from '../../src/worker/errors.ts';
import { parseTaskOptions } from '../../src/worker/task_options.ts';

describe('batch option', () => {
  it('accepts maxSize, maxWait as a duration, and a key', () => {
    assert.deepEqual(parseBatchOptions('b', { maxSize: 100, maxWait: '200ms', key: 'tenant' }), {
      maxSize: 100,
      maxWaitMs: 200,
      key: 'tenant',
    });
    assert.deepEqual(parseTaskOptions('t.ts', { batch: { maxSize: 5, maxWait: 1000 } }).batch, {
      maxSize: 5,
      maxWaitMs: 1000,
    });
  });

  it('refuses bad values with the option named', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ maxSize: 0, maxWait: '1s' }, /b\.maxSize must be an integer from 1 to 10000, got 0/],
      [{ maxSize: 10_001, maxWait: '1s' }, /maxSize/],
      [{ maxSize: 2.5, maxWait: '1s' }, /maxSize/],
      [{ maxSize: 5 }, /b\.maxWait is required/],
      [{ maxSize: 5, maxWait: 'soon' }, /b\.maxWait/],
      [{ maxSize: 5, maxWait: '1s', key: '' }, /b\.key must name a top-level payload field/],
      [{ maxSize: 5, maxWait: '1s', size: 3 }, /unknown key "size"/],
      [[], /must be an object/],
    ];
    for (const [value, message] of bad) assert.throws(() => parseBatchOptions('b', value), message);
  });
});

describe('a call answer, per job', () => {
  it('nothing: every job done', () => {
    assert.deepEqual(readAnswer(undefined, 2, 1000), [{ error: null }, { error: null }]);
  });

  it('one entry per job: values are results, Errors are failures of their kind', () => {
    const answers = readAnswer(
      [{ id: 'a' }, new PermanentError('bad address'), new RetryLaterError('busy', 5000), new SnoozeError('1m'), null],
      5,
      1000,
    );
    assert.deepEqual(answers[0], { error: null, result: '{"id":"a"}' });
    assert.equal(answers[1]?.error?.permanent, true);
    assert.equal(answers[2]?.error?.retryInMs, 5000);
    assert.equal(answers[3]?.error?.snoozeMs, 60_000);
    assert.equal(answers[4]?.error, null);
    // A plain object with permanent: true is a value, not a failure.
    assert.deepEqual(readAnswer([{ permanent: true }], 1, 1000)[0], { error: null, result: '{"permanent":true}' });
  });

  it('a value too large fails its job alone', () => {
    const [big, small] = readAnswer(['x'.repeat(2000), 1], 2, 1000);
    assert.ok(big?.error);
    assert.deepEqual(small, { error: null, result: '1' });
  });

  it('a wrong length or a non-array fails every job with BatchAnswerMismatch', () => {
    for (const value of [[1], { ok: true }, 'done']) {
      const answers = readAnswer(value, 2, 1000);
      assert.equal(answers.length, 2);
      for (const a of answers) {
        assert.equal(a.error?.name, 'BatchAnswerMismatch');
        assert.equal(a.error?.permanent, false);
      }
    }
  });
});

describe('batch key', () => {
  it('is the JSON of one top-level field; none when absent or not an object', () => {
    assert.equal(batchKeyOf('{"tenant":"a","n":1}', 'tenant'), '"a"');
    assert.equal(batchKeyOf('{"tenant":{"id":7}}', 'tenant'), '{"id":7}');
    assert.equal(batchKeyOf('{"tenant":null}', 'tenant'), 'null');
    assert.equal(batchKeyOf('{"n":1}', 'tenant'), undefined);
    assert.equal(batchKeyOf('[1]', 'tenant'), undefined);
    assert.equal(batchKeyOf(null, 'tenant'), undefined);
    assert.equal(batchKeyOf('not json', 'tenant'), undefined);
  });
});

describe('call size', () => {
  it('is maxSize capped by concurrency and globalConcurrency', () => {
    const batch = { maxSize: 100, maxWaitMs: 200 };
    const queues = loadConfig({
      env: { NODE_ENV: 'test' },
      overrides: {
        queues: { a: { concurrency: 500 }, b: { concurrency: 40 }, c: { concurrency: 40, globalConcurrency: 10 } },
      },
    }).queues;
    assert.equal(batchSize(batch, queues.a!), 100);
    assert.equal(batchSize(batch, queues.b!), 40);
    assert.equal(batchSize(batch, queues.c!), 10);
  });
});

describe('batch metrics', () => {
  it('count calls and observe their size and fill wait', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const events = new SupervisorEvents();
    observeEvents(events, metrics);
    events.emit('batch:called', { queue: 'email', kind: 'send_email', size: 100, fillMs: 150 });
    events.emit('batch:called', { queue: 'email', kind: 'send_email', size: 3, fillMs: 200 });
    const text = await metrics.registry.metrics();
    assert.match(text, /jobvisor_batch_calls_total\{queue="email",kind="send_email"\} 2/);
    assert.match(text, /jobvisor_batch_size_sum\{queue="email",kind="send_email"\} 103/);
    assert.match(text, /jobvisor_batch_fill_wait_seconds_sum\{queue="email",kind="send_email"\} 0\.35/);
  });
});
