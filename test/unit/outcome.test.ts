/**
 * The outcome decision (src/supervisor/dispatch/outcome.ts), without threads or
 * a database: every result (success, task error with its hints, thread death,
 * out of memory, a thread killed to stop another job) against every state
 * (not stopped, timeout, lease lost, shutdown; attempts left or used up).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  deathCause,
  decideOutcome,
  describeThreadDeath,
  oversized,
  type RunResult,
  type RunState,
  type StopReason,
} from '../../src/supervisor/dispatch/outcome.ts';

const STOPS: Array<StopReason | undefined> = [undefined, 'timeout', 'lease-lost', 'shutdown'];

function state(stop: StopReason | undefined, attempt = 1, maxAttempts = 3): RunState {
  return { stop, timeoutMs: 1500, job: { attempt, maxAttempts } };
}

const success: RunResult = { type: 'success', runMs: 12 };
const taskError = (permanent = false, retryInMs: number | null = null): RunResult => ({
  type: 'task-error',
  runMs: 34,
  error: { name: 'TypeError', message: 'boom', permanent, retryInMs },
});
const crash: RunResult = { type: 'thread-died', runMs: 56, cause: new Error('kaput'), killedToStop: null };
const oom: RunResult = {
  type: 'thread-died',
  runMs: 78,
  cause: Object.assign(new Error('Worker terminated due to reaching memory limit'), {
    code: 'ERR_WORKER_OUT_OF_MEMORY',
  }),
  killedToStop: null,
};
const killedForOther: RunResult = { type: 'thread-died', runMs: 90, cause: new Error('aborted'), killedToStop: '42' };

describe('decideOutcome', () => {
  it('a lost lease drops the run whatever happened on the thread: nothing may be written', () => {
    for (const result of [success, taskError(), taskError(true), crash, oom, killedForOther])
      assert.deepEqual(decideOutcome(result, state('lease-lost')), { type: 'drop' });
  });

  it('success is done, even when a stop (timeout, shutdown) came too late to matter', () => {
    for (const stop of [undefined, 'timeout', 'shutdown'] as const)
      assert.deepEqual(decideOutcome(success, state(stop)), { type: 'done', runMs: 12 });
  });

  it('shutdown hands every unfinished run back without using an attempt', () => {
    for (const result of [taskError(), taskError(true), crash, oom, killedForOther])
      assert.deepEqual(decideOutcome(result, state('shutdown')), { type: 'release', reason: 'aborted by shutdown' });
  });

  it('a timeout fails the run with the timeout, and says when the thread had to be terminated', () => {
    assert.deepEqual(decideOutcome(taskError(true, 5), state('timeout')), {
      type: 'retry',
      failure: { runMs: 34, error: 'TimeoutError: job timed out after 1500 ms', permanent: false, retryInMs: null },
    });
    assert.deepEqual(decideOutcome(crash, state('timeout')), {
      type: 'retry',
      failure: {
        runMs: 56,
        error: 'TimeoutError: job timed out after 1500 ms and did not stop; its worker thread was terminated',
        permanent: false,
        retryInMs: null,
      },
    });
    const last = decideOutcome(killedForOther, state('timeout', 3, 3));
    assert.equal(last.type, 'dead', 'a timeout on the last attempt is dead');
  });

  it('a task error keeps its permanent and retryInMs hints', () => {
    assert.deepEqual(decideOutcome(taskError(false, 250), state(undefined)), {
      type: 'retry',
      failure: { runMs: 34, error: 'TypeError: boom', permanent: false, retryInMs: 250 },
    });
    assert.deepEqual(decideOutcome(taskError(true), state(undefined)), {
      type: 'dead',
      failure: { runMs: 34, error: 'TypeError: boom', permanent: true, retryInMs: null },
    });
  });

  it('retry while attempts remain, dead on the last attempt', () => {
    assert.equal(decideOutcome(taskError(), state(undefined, 2, 3)).type, 'retry');
    assert.equal(decideOutcome(taskError(), state(undefined, 3, 3)).type, 'dead');
    assert.equal(decideOutcome(crash, state(undefined, 8, 8)).type, 'dead');
  });

  it('a thread terminated to stop another job releases this one', () => {
    assert.deepEqual(decideOutcome(killedForOther, state(undefined)), {
      type: 'release',
      reason: 'thread terminated to stop job 42',
    });
  });

  it('a thread death fails the run with what killed the thread', () => {
    const crashed = decideOutcome(crash, state(undefined));
    assert.equal(crashed.type, 'retry');
    assert.match(crashed.type === 'retry' ? crashed.failure.error : '', /^WorkerCrashed: .*kaput/);
    const outOfMemory = decideOutcome(oom, state(undefined));
    assert.match(
      outOfMemory.type === 'retry' ? outOfMemory.failure.error : '',
      /^WorkerOutOfMemory: .*pool\.maxOldGenerationSizeMb/,
    );
  });

  it('a task that snoozed is snoozed, on any attempt, even the last or with other hints', () => {
    const snoozed = (snoozeMs: number, permanent = false): RunResult => ({
      type: 'task-error',
      runMs: 34,
      error: { name: 'SnoozeError', message: 'snoozed', permanent, retryInMs: null, snoozeMs },
    });
    for (const [attempt, max] of [
      [1, 3],
      [3, 3],
    ] as const)
      assert.deepEqual(decideOutcome(snoozed(30_000), state(undefined, attempt, max)), {
        type: 'snooze',
        runMs: 34,
        delayMs: 30_000,
      });
    assert.deepEqual(decideOutcome(snoozed(0, true), state(undefined)), { type: 'snooze', runMs: 34, delayMs: 0 });
  });

  it('a snooze gives way to a lost lease (drop), a shutdown (release) and a timeout (failure)', () => {
    const snoozed: RunResult = {
      type: 'task-error',
      runMs: 34,
      error: { name: 'SnoozeError', message: 'snoozed', permanent: false, retryInMs: null, snoozeMs: 5 },
    };
    assert.deepEqual(decideOutcome(snoozed, state('lease-lost')), { type: 'drop' });
    assert.equal(decideOutcome(snoozed, state('shutdown')).type, 'release');
    assert.equal(decideOutcome(snoozed, state('timeout')).type, 'retry');
  });

  it('a task that slept or waited is parked on any attempt, and after a shutdown request too', () => {
    for (const kind of ['sleep', 'wait'] as const) {
      const park = { kind, name: 'n', untilMs: null, delayMs: 60_000 };
      const parked: RunResult = {
        type: 'task-error',
        runMs: 34,
        error: { name: 'ParkError', message: 'parked', permanent: false, retryInMs: null, park },
      };
      for (const attempt of [1, 3])
        assert.deepEqual(decideOutcome(parked, state(undefined, attempt, 3)), { type: kind, runMs: 34, park });
      assert.deepEqual(decideOutcome(parked, state('shutdown')), { type: kind, runMs: 34, park });
      assert.deepEqual(decideOutcome(parked, state('lease-lost')), { type: 'drop' });
      assert.equal(decideOutcome(parked, state('timeout')).type, 'retry', 'a timed-out run used its attempt');
    }
  });

  it('a success carries what the task reported, and nothing extra when it reported nothing', () => {
    assert.deepEqual(decideOutcome({ type: 'success', runMs: 1, result: '{"a":1}' }, state(undefined)), {
      type: 'done',
      runMs: 1,
      report: { result: '{"a":1}', progress: undefined },
    });
    assert.deepEqual(decideOutcome({ type: 'success', runMs: 1, progress: '7' }, state('timeout')), {
      type: 'done',
      runMs: 1,
      report: { result: undefined, progress: '7' },
    });
    assert.deepEqual(decideOutcome({ type: 'success', runMs: 1, result: '1' }, state('lease-lost')), { type: 'drop' });
    assert.deepEqual(decideOutcome({ type: 'success', runMs: 1 }, state(undefined)), { type: 'done', runMs: 1 });
  });

  it('decides something for every result in every state', () => {
    for (const stop of STOPS)
      for (const result of [success, taskError(), taskError(true, 9), crash, oom, killedForOther])
        for (const [attempt, max] of [
          [1, 3],
          [3, 3],
        ] as const) {
          const o = decideOutcome(result, state(stop, attempt, max));
          assert.ok(['done', 'retry', 'dead', 'release', 'drop', 'snooze'].includes(o.type));
          if (o.type === 'retry') assert.ok(attempt < max && !o.failure.permanent);
        }
  });
});

describe('failure texts', () => {
  it('names exits, crashes and the payload limit', () => {
    assert.match(describeThreadDeath(new Error('worker exited with code: 3')), /^WorkerExited: .*process\.exit/);
    assert.match(describeThreadDeath(null), /^WorkerCrashed: /);
    assert.deepEqual(oversized({ payloadBytes: 2000, payloadStoredBytes: null }, 1024), {
      runMs: 0,
      error: 'PayloadTooLarge: the payload is 2000 bytes of JSON, over jobs.maxPayloadBytes (1024)',
      permanent: true,
      retryInMs: null,
    });
    assert.equal(
      oversized({ payloadBytes: null, payloadStoredBytes: 9000 }, 1024).error,
      'PayloadTooLarge: the payload is stored in 9000 bytes, so its JSON is far over jobs.maxPayloadBytes (1024)',
    );
    assert.equal(deathCause(undefined), 'session ended early');
    assert.equal(deathCause(new Error('x')), 'x');
  });
});

describe('a rate-limited job its thread reached past its start window', () => {
  const late: RunResult = {
    type: 'task-error',
    runMs: 0,
    error: { name: 'MissedStartSlot', message: 'late', permanent: false, retryInMs: null, lateMs: 7 },
  };
  it('is handed back without an attempt, whatever else was asked of it, unless its lease was lost', () => {
    for (const stop of STOPS) {
      const outcome = decideOutcome(late, state(stop, 3, 3));
      if (stop === 'lease-lost') assert.deepEqual(outcome, { type: 'drop' });
      else assert.equal(outcome.type, 'release', `stop ${stop}`);
    }
  });
});
