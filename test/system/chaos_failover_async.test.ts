/**
 * Chaos: failover to a promoted asynchronous standby mid-burst
 * (helpers/chaos/failover.ts does it). What the old primary had not yet sent
 * may be lost: the last enqueues, and outcomes, whose jobs then revert to
 * running on the new primary and run again. Measured and reported
 * (RELIABILITY.md "Failover and poolers"); what must hold is at-least-once for
 * what the new primary has: every job on it ends done, and the supervisors
 * resume on it as with synchronous replication.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failoverScenario } from '../helpers/chaos/failover.ts';
import { report } from '../helpers/chaos/measure.ts';

describe('chaos: failover to an asynchronous standby', () => {
  it('runs every job the new primary has, and says what was lost', async () => {
    // failoverScenario fails unless every job on the new primary ends done.
    const r = await failoverScenario('asynchronous');
    report('failover.asynchronous', { ...r });
    assert.equal(r.notDone, r.lostEnqueues, 'every committed job the new primary has ends done');
    assert.ok(
      r.resumeAfterRetargetMs <= 10_000,
      `claims resumed ${r.resumeAfterRetargetMs} ms after the endpoint moved`,
    );
    assert.ok(r.readyz503DuringOutage, '/readyz 503 during the outage');
    assert.ok(Math.max(...r.pickupAfterMs) < 1500, `LISTEN back: pickups ${JSON.stringify(r.pickupAfterMs)} ms`);
  });
});
