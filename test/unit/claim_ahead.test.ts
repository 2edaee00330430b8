/**
 * How far a queue limited per key claims ahead (src/supervisor/claim/ahead.ts):
 * nothing until it has finished something, then what it finishes in 100 ms at
 * the last second's rate, never more than its prefetch; finishes older than
 * the window stop counting.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AHEAD_HORIZON_MS, ClaimAhead, RATE_WINDOW_MS } from '../../src/supervisor/claim/ahead.ts';

describe('claiming ahead by time (per-key queues)', () => {
  // 50 places and a prefetch of 2,000: the dispatcher's capacity is 2,050 less what the queue holds.
  const places = 50;
  const most = 2000;
  function rig() {
    let t = 0;
    const ahead = new ClaimAhead(most, () => t);
    return { ahead, at: (ms: number) => (t = ms) };
  }

  it('holding nothing and having finished nothing, claims for its places alone', () => {
    const { ahead } = rig();
    assert.equal(ahead.room(places + most), places);
  });

  it('claims ahead what it finishes in the horizon, at the rate of the last second', () => {
    const { ahead, at } = rig();
    ahead.room(places + most);
    ahead.claimed(50);
    // 50 finished within the first 100 ms: 50 per horizon.
    at(20);
    assert.equal(ahead.room(places + most), places + 50);
    ahead.claimed(100);
    // 100 more seen finished at 500 ms: 150 over the 480 ms since the first were seen.
    at(500);
    assert.equal(ahead.room(places + most), places + Math.ceil((150 * AHEAD_HORIZON_MS) / 480));
  });

  it('never claims ahead more than its prefetch', () => {
    let t = 0;
    const ahead = new ClaimAhead(40, () => t);
    ahead.room(90);
    ahead.claimed(90);
    t = 10;
    // 90 finished in 10 ms: 900 per horizon, capped at 40.
    assert.equal(ahead.room(90), 50 + 40);
  });

  it('finishes older than the window no longer count: a queue gone slow holds less', () => {
    const { ahead, at } = rig();
    ahead.room(places + most);
    ahead.claimed(50);
    at(10);
    ahead.room(places + most);
    ahead.claimed(1);
    at(10 + RATE_WINDOW_MS + 1);
    // Only the one job finished since counts, over the time since it was seen.
    assert.equal(ahead.room(places + most), places + 1);
  });

  it('finishes seen close together count in full', () => {
    const { ahead, at } = rig();
    const capacity = places + most;
    ahead.room(capacity);
    for (let t = 1; t <= 25; t++) {
      at(t);
      ahead.claimed(10);
      // 10 claimed, then 10 finished, seen at the next look: 25 looks within 10-ms buckets, 100 ms of span.
      assert.equal(ahead.room(capacity), places + 10 * t);
    }
  });

  it('a claim that took nothing leaves the count of finishes as it was', () => {
    const { ahead, at } = rig();
    ahead.room(places + most);
    ahead.claimed(0);
    at(30);
    assert.equal(ahead.room(places + most), places);
  });
});
