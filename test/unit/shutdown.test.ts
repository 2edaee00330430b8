/**
 * The exit decision of a draining process (src/run/shutdown.ts), driven
 * through its real signal handlers with the exits recorded instead of taken.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import pino from 'pino';
import { drainOnSignals } from '../../src/run/shutdown.ts';

const log = pino({ level: 'silent' });
let remove: (() => void) | undefined;
afterEach(() => remove?.());

function harness(options: { stop: () => Promise<void>; alive: number[]; graceMs?: number; marginMs?: number }) {
  const calls: string[] = [];
  let done!: () => void;
  const ended = new Promise<void>((resolve) => (done = resolve));
  const alive = [...options.alive];
  remove = drainOnSignals({
    log,
    stop: options.stop,
    graceMs: options.graceMs,
    marginMs: options.marginMs,
    threadsAlive: () => Promise.resolve(alive.shift() ?? 0),
    killChildren: () => {
      calls.push('killChildren');
      return [];
    },
    exit: (code) => {
      calls.push(`exit ${code}`);
      done();
    },
    exitHard: () => {
      calls.push('exitHard');
      done();
    },
  });
  process.emit('SIGTERM', 'SIGTERM');
  return { calls, ended };
}

describe('drainOnSignals', () => {
  it('exits 0 after the drain when every thread has died', { timeout: 5000 }, async () => {
    const h = harness({ stop: () => Promise.resolve(), alive: [0] });
    await h.ended;
    assert.deepEqual(h.calls, ['exit 0']);
  });

  it(
    'kills child processes when a thread lives on, and exits normally once it has died',
    { timeout: 5000 },
    async () => {
      const h = harness({ stop: () => Promise.resolve(), alive: [1, 0] });
      await h.ended;
      assert.deepEqual(h.calls, ['killChildren', 'exit 0']);
    },
  );

  it('exits hard when a thread survives even that (process.exit would wait for it)', { timeout: 5000 }, async () => {
    const h = harness({ stop: () => Promise.resolve(), alive: [1, 1] });
    await h.ended;
    assert.deepEqual(h.calls, ['killChildren', 'exitHard']);
  });

  it('ends a drain that overruns grace + margin', { timeout: 5000 }, async () => {
    const h = harness({ stop: () => new Promise(() => {}), alive: [0], graceMs: 20, marginMs: 20 });
    await h.ended;
    assert.deepEqual(h.calls, ['exit 1']);
  });
});
