/**
 * Chaos: failover to a promoted synchronous standby mid-burst
 * (helpers/chaos/failover.ts does it). With `synchronous_standby_names` set:
 * no committed enqueue is lost, no outcome a supervisor was told was written is
 * lost, no job runs twice at the same time, claims resume within 10 s of the
 * endpoint moving, LISTEN is back, /readyz is 503 during the outage and 200
 * after, and the reaper returns the killed supervisor's jobs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failoverScenario } from '../helpers/chaos/failover.ts';
import { report } from '../helpers/chaos/measure.ts';

describe('chaos: failover to a synchronous standby', () => {
  it('loses nothing committed, runs nothing twice at once, and resumes on the new primary', async () => {
    const r = await failoverScenario('synchronous');
    report('failover.synchronous', { ...r });
    assert.equal(r.lostEnqueues, 0, 'every committed enqueue is on the new primary');
    assert.equal(r.lostOutcomes, 0, 'every outcome a supervisor was told was written is there');
    assert.equal(r.concurrentRuns, 0, 'no job ran twice at the same time');
    assert.equal(r.notDone, 0, 'every committed job ends done');
    assert.ok(
      r.resumeAfterRetargetMs <= 10_000,
      `claims resumed ${r.resumeAfterRetargetMs} ms after the endpoint moved`,
    );
    assert.ok(r.readyz503DuringOutage, '/readyz 503 during the outage');
    assert.ok(r.readyz200AfterRetargetMs <= 15_000, `/readyz 200 ${r.readyz200AfterRetargetMs} ms after`);
    assert.ok(Math.max(...r.pickupAfterMs) < 1500, `LISTEN back: pickups ${JSON.stringify(r.pickupAfterMs)} ms`);
    assert.ok(
      r.reapedOfKilled >= 1,
      `the reaper returned the killed supervisor's jobs (${r.reapedOfKilled} of ${r.runningOnKilled} running)`,
    );
  });
});
