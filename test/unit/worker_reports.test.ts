/**
 * The thread's side of what a task reports back, without threads or a
 * database: SnoozeError and its crossing of the thread boundary, the result and
 * progress encodings with their limits, and the progress throttle.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SnoozeError } from '../../src/index.ts';
import { toTaskError } from '../../src/worker/convert.ts';
import { ProgressThrottle } from '../../src/worker/progress.ts';
import { encodeProgress, encodeResult, MAX_PROGRESS_BYTES } from '../../src/worker/report.ts';
import { taskContext } from '../helpers/task_context.ts';

describe('SnoozeError', () => {
  it('takes a duration or ms and crosses the thread boundary as snoozeMs', () => {
    assert.equal(new SnoozeError('30s').snoozeMs, 30_000);
    assert.equal(new SnoozeError(250).snoozeMs, 250);
    const e = toTaskError(new SnoozeError('5m'));
    assert.equal(e.snoozeMs, 300_000);
    assert.equal(e.name, 'SnoozeError');
    assert.deepEqual(structuredClone(e).snoozeMs, 300_000);
  });

  it('refuses a delay that is not a duration, naming it', () => {
    assert.throws(() => new SnoozeError('soon'), /"soon" is not a duration/);
    assert.throws(() => new SnoozeError(-1), RangeError);
    assert.throws(() => new SnoozeError(Number.NaN), RangeError);
  });

  it('is recognised by its field on any error, and an error without it is no snooze', () => {
    assert.equal(toTaskError(Object.assign(new Error('x'), { snoozeMs: 10 })).snoozeMs, 10);
    assert.equal(toTaskError(Object.assign(new Error('x'), { snoozeMs: -1 })).snoozeMs, undefined);
    assert.equal(toTaskError(new Error('x')).snoozeMs, undefined);
  });

  it('is what ctx.snooze throws', () => {
    assert.throws(
      () => taskContext().snooze('1h'),
      (err: unknown) => err instanceof SnoozeError,
    );
  });
});

describe('encodeResult', () => {
  it('gives JSON text, or nothing for undefined and values JSON leaves out', () => {
    assert.equal(encodeResult({ a: [1, 'é'] }, 100), '{"a":[1,"é"]}');
    assert.equal(encodeResult(null, 100), 'null');
    assert.equal(encodeResult(undefined, 100), undefined);
    assert.equal(
      encodeResult(() => 1, 100),
      undefined,
    );
  });

  it('counts bytes, not characters, against jobs.maxResultBytes', () => {
    assert.equal(encodeResult('éé', 6), '"éé"');
    assert.throws(
      () => encodeResult('ééé', 6),
      /^ResultTooLarge: the task's return value is 8 bytes of JSON, over jobs.maxResultBytes \(6\)/,
    );
  });

  it('names why a value is not JSON', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    assert.throws(() => encodeResult(1n, 100), /^ResultNotJson: .*BigInt/);
    assert.throws(() => encodeResult(cycle, 100), /^ResultNotJson: .*circular/i);
    assert.throws(() => encodeResult({ s: 'a\u0000' }, 100), /^ResultNotJson: .*U\+0000/);
    assert.throws(() => encodeResult({ s: 'a\ud800' }, 100), /^ResultNotJson: .*unpaired UTF-16 surrogate/);
    assert.throws(() => encodeProgress(['\udc00']), /^ProgressNotJson: .*unpaired UTF-16 surrogate/);
    assert.equal(encodeResult('😀', 100), '"😀"', 'a paired surrogate is fine');
    assert.equal(encodeResult('\\ud800', 100), '"\\\\ud800"', 'so is the text \\ud800');
    // An escaped backslash followed by "u0000" is not the character.
    assert.equal(encodeResult('\\u0000', 100), '"\\\\u0000"');
  });
});

describe('encodeProgress', () => {
  it('takes small JSON and refuses more than its limit', () => {
    assert.equal(encodeProgress({ done: 3, of: 10 }), '{"done":3,"of":10}');
    assert.equal(encodeProgress(undefined), 'null');
    assert.throws(
      () => encodeProgress('x'.repeat(MAX_PROGRESS_BYTES)),
      /^ProgressTooLarge: the progress value is 4098 bytes of JSON, over the 4096-byte limit/,
    );
    assert.throws(() => encodeProgress({ n: 1n }), /^ProgressNotJson: /);
  });
});

describe('ProgressThrottle', () => {
  it('sends the first value at once, then the newest at most once a second; take() gives the last', async () => {
    const sent: string[] = [];
    let onSend: (() => void) | undefined;
    const throttle = new ProgressThrottle((token, json) => {
      sent.push(`${token}=${json}`);
      onSend?.();
    });
    throttle.report('a', '1');
    throttle.report('a', '2');
    throttle.report('a', '3');
    throttle.report('b', '9');
    assert.deepEqual(sent, ['a=1', 'b=9'], 'one value per job leaves at once');
    await new Promise<void>((resolve) => (onSend = resolve));
    assert.deepEqual(sent.slice(2), ['a=3'], 'the newest value left when its second was up');
    assert.equal(throttle.take('a'), '3', 'the last value, sent or not');
    assert.equal(throttle.take('a'), undefined, 'taken once');
    throttle.report('c', '1');
    throttle.report('c', '2');
    assert.equal(throttle.take('c'), '2');
    assert.equal(throttle.take('b'), '9');
    assert.equal(throttle.take('never'), undefined);
    assert.deepEqual(sent, ['a=1', 'b=9', 'a=3', 'c=1'], 'nothing is sent for a run once taken');
  });
});
