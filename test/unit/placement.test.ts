/**
 * Placement (src/supervisor/dispatch/placement.ts), without threads: exclusive
 * runs take a thread alone, others share up to jobsPerThread, and a queue left
 * without a thread gets one back from the busiest queue.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { place, sessionToYield, type SessionView } from '../../src/supervisor/dispatch/placement.ts';

function session(queue: string, running: number, exclusive = 0, ending = false, yielding = false): SessionView {
  const tokens = new Set(Array.from({ length: running }, (_, i) => String(i)));
  return { queue, running: tokens, exclusive, ending, yielding };
}

const shared = { queue: 'default', exclusive: false, jobsPerThread: 4, maxThreads: 2 };
const alone = { ...shared, exclusive: true };

describe('place', () => {
  it('shares a session up to jobsPerThread, then opens one, then waits', () => {
    const a = session('default', 3);
    assert.deepEqual(place([a], shared), { type: 'use', session: a });
    assert.deepEqual(place([session('default', 4)], shared), { type: 'open' });
    assert.equal(place([session('default', 4), session('default', 4)], shared).type, 'wait');
  });

  it('never puts a run beside an exclusive run', () => {
    assert.deepEqual(place([session('default', 1, 1)], shared), { type: 'open' });
  });

  it('puts an exclusive run only on an empty session', () => {
    const empty = session('default', 0);
    assert.deepEqual(place([session('default', 1), empty], alone), { type: 'use', session: empty });
    assert.deepEqual(place([session('default', 1)], alone), { type: 'open' });
    assert.equal(place([session('default', 1), session('default', 1)], alone).type, 'wait');
  });

  it('uses only sessions of the run queue that are not ending', () => {
    assert.deepEqual(place([session('cpu', 0), session('default', 0, 0, true)], { ...shared, maxThreads: 3 }), {
      type: 'open',
    });
  });
});

describe('sessionToYield', () => {
  it('a queue without a thread takes one from the busiest queue (the least loaded session)', () => {
    const busy = session('default', 9);
    const light = session('default', 2);
    assert.equal(sessionToYield([busy, light], 'cpu'), light);
  });

  it('a queue with its share does not take more', () => {
    assert.equal(sessionToYield([session('default', 9), session('cpu', 1)], 'cpu'), null);
    assert.equal(sessionToYield([session('default', 9), session('cpu', 1)], 'default'), null);
  });

  it('takes one when another queue holds two more', () => {
    const s = [session('default', 5), session('default', 5), session('default', 1), session('cpu', 1)];
    assert.equal(sessionToYield(s, 'cpu'), s[2]);
  });

  it('waits while a session is already ending or yielding', () => {
    assert.equal(sessionToYield([session('default', 9), session('default', 3, 0, true)], 'cpu'), null);
    assert.equal(sessionToYield([session('default', 9), session('default', 3, 0, false, true)], 'cpu'), null);
    assert.equal(place([session('default', 1, 0, false, true)], shared).type, 'open');
  });
});
