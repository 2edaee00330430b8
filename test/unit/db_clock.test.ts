/**
 * The database's clock as a supervisor measures it (src/supervisor/claim/db_clock.ts)
 * and the worker's start-window check (src/worker/start_window.ts), with
 * injected clocks: no database, no threads.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DbClock } from '../../src/supervisor/claim/db_clock.ts';
import { reachStartWindow } from '../../src/worker/start_window.ts';

describe('DbClock', () => {
  it("reads the offset NTP-style: the database's time on the statement costs no accuracy", () => {
    let now = 1_000_000;
    const clock = new DbClock(() => now);
    // The database is 20 s ahead; 1 ms each way, 8 ms spent on the statement.
    clock.observe({ sentMs: now, dbReceivedMs: now + 20_001, dbRepliedMs: now + 20_009, receivedMs: now + 10 });
    assert.equal(clock.offset, 20_000);
    assert.equal(clock.toLocal(now + 20_500), now + 500);
    now += 10;
    // Half the 2-ms round trip left once the statement's 8 ms are taken out, plus 1.5 ms for whole-ms readings.
    assert.ok(clock.errorMs <= 2.51, `error bound ${clock.errorMs}`);
  });

  it('keeps the reading with the smallest error bound, aged, and takes a better one', () => {
    let now = 0;
    const clock = new DbClock(() => now);
    clock.observe({ sentMs: 0, dbReceivedMs: 5001, dbRepliedMs: 5001, receivedMs: 2 });
    assert.equal(clock.offset, 5000);
    // A slow answer (a starved event loop): 60 ms round trip, off by up to 30 ms. Ignored.
    now = 1000;
    clock.observe({ sentMs: 1000, dbReceivedMs: 6001, dbRepliedMs: 6001, receivedMs: 1060 });
    assert.equal(clock.offset, 5000);
    // Much later the old reading has aged past the slow one's bound; a new fast one wins at once.
    now = 2000;
    clock.observe({ sentMs: 2000, dbReceivedMs: 7003, dbRepliedMs: 7003, receivedMs: 2002 });
    assert.equal(clock.offset, 5002);
  });

  it('without a reading: no offset, and an unbounded error', () => {
    const clock = new DbClock(() => 5);
    assert.equal(clock.offset, 0);
    assert.equal(clock.errorMs, Infinity);
  });
});

describe('reachStartWindow', () => {
  it('starts a job in its window at once, and refuses one past it with how late it is', async () => {
    assert.equal(await reachStartWindow(90, 110, () => 100), null);
    assert.equal(await reachStartWindow(90, 110, () => 117), 7);
  });

  it('waits for an early job until its slot, checking the clock again after each timer', async () => {
    const readings = [100, 103, 104, 105];
    const start = await reachStartWindow(105, 125, () => readings.shift() ?? 105);
    assert.equal(start, null);
    assert.equal(readings.length, 0, 'it read the clock until the slot had come');
  });
});
