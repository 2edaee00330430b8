/**
 * The demo's wait for progress (src/cli/demo.ts): a completion or a second,
 * whichever comes first, leaving no listener behind either way. A slow demo
 * (a job in a long backoff) once waited out eleven quiet seconds in a row and
 * printed a MaxListenersExceededWarning.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextCompletion } from '../../src/cli/demo.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';

describe('the demo waiting for progress', () => {
  it('seconds without a completion leave no job:completed listener behind', async () => {
    const events = new SupervisorEvents();
    for (let i = 0; i < 12; i++) await nextCompletion(events, 1);
    assert.equal(events.listenerCount('job:completed'), 0);
  });

  it('a completion ends the wait at once', async () => {
    const events = new SupervisorEvents();
    const waited = nextCompletion(events, 60_000);
    events.emit('job:completed', { jobs: [], durationsMs: [] } as never);
    await waited;
    assert.equal(events.listenerCount('job:completed'), 0);
  });
});
