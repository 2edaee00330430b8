/**
 * The start window arithmetic of rate limits (src/queue/rate_slots.ts): the
 * readings a window allows start within [slot, slot + guard] by the
 * database's clock whatever the error it was given, and every error up to
 * maxClockErrorMs leaves a window. Pure: no database, no clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { maxClockErrorMs, MIN_START_WINDOW_MS, rateWindowMs, startWindow } from '../../src/queue/rate_slots.ts';

describe('startWindow', () => {
  it('keeps every start within [slot, slot + guard] for the true moment anywhere within ± error', () => {
    for (const periodMs of [100, 600, 1000, 60_000]) {
      const guard = rateWindowMs(periodMs) - periodMs;
      const most = maxClockErrorMs(periodMs);
      for (let errorMs = 1.5; errorMs <= most; errorMs += 0.25)
        for (let frac = 0; frac < 1; frac += 0.125) {
          const slotMs = 1_000_000 + frac;
          const w = startWindow(slotMs, errorMs, periodMs);
          assert.ok(w, `period ${periodMs}, error ${errorMs}: a window`);
          assert.ok(w.notAfterMs - w.notBeforeMs >= MIN_START_WINDOW_MS);
          // The slot's true local moment anywhere in slotMs ± error; a reading n is a moment in [n, n + 1).
          for (const trueSlot of [slotMs - errorMs, slotMs + errorMs]) {
            assert.ok(w.notBeforeMs >= trueSlot, `period ${periodMs}, error ${errorMs}: not before the slot`);
            assert.ok(w.notAfterMs + 1 <= trueSlot + guard, `period ${periodMs}, error ${errorMs}: within the guard`);
          }
        }
    }
  });

  it('gives no window when the error leaves less than the minimum', () => {
    assert.equal(maxClockErrorMs(1000), 9);
    assert.equal(startWindow(1_000_000, 11, 1000), null);
    assert.equal(startWindow(1_000_000, 30, 1000), null);
  });

  it('guards a window by 2.5 % of the period, from 15 to 25 ms', () => {
    assert.equal(rateWindowMs(100), 115);
    assert.equal(rateWindowMs(1000), 1025);
    assert.equal(rateWindowMs(60_000), 60_025);
  });
});
