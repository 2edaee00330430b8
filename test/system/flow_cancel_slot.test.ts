/**
 * A cancelled running job keeps its limit slot until its run has ended: the
 * docs/guides/flow-control.md's "holds its slot from its claim until its outcome is written".
 * Cancelling the running job of perKeyConcurrency 1 (or globalConcurrency 1)
 * used to free its slot at once: the next job started while the first task
 * was still going, until the heartbeat aborted it (up to lease/3), and a task
 * that ignores its signal ran on until its thread was taken.
 *
 * A real supervisor process; each run ticks its `ended` every 50 ms from
 * inside the task (flow_ticks.js), so the records show any moment two runs of
 * one slot were alive at once, the killed ones included.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cancelJobs } from '../../src/queue/admin/index.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { Store } from '../../src/queue/sql.ts';
import { until } from '../helpers/poll.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createRunsTable, maxOverlap, readRuns } from '../helpers/flow.ts';
import { fixtureFleet } from '../helpers/supervisor.ts';

let db: TestDatabase;
let store: Store;

const fleet = fixtureFleet(() => db.url, {
  pool: { maxThreads: 4, dbPoolSize: 4 },
  queues: {
    keyed: { concurrency: 3, jobsPerThread: 3, perKeyConcurrency: 1 },
    single: { concurrency: 3, jobsPerThread: 3, globalConcurrency: 1 },
  },
  jobs: { lease: '3s', timeout: '60s' },
  reaper: { interval: '500ms' },
  poll: { interval: '1s' },
});

before(async () => {
  db = await createTestDatabase('flow_cancel_slot');
  store = { db: db.pool, schema: 'jobvisor' };
  await createRunsTable(db.pool);
  await fleet.start();
});
after(async () => {
  await fleet.kill();
  await db.drop();
});

const runsIn = async (queue: string) => (await readRuns(db.pool, queue)).length;

/**
 * Three 20-s jobs of one slot; each running one is cancelled as soon as it has
 * started, the second and third ignoring their abort signal. Returns the runs.
 */
async function cancelEachRunning(queue: string) {
  const ids = await enqueueMany(
    db.pool,
    [0, 1, 2].map((i) => ({
      kind: 'flow_ticks',
      queue,
      payload: { ms: 20_000, key: 'k', ignoreAbort: i > 0 },
      concurrencyKey: queue === 'keyed' ? 'k' : undefined,
    })),
  );
  for (let n = 1; n <= 3; n++) {
    await until(
      `${queue}: run ${n} started`,
      () => runsIn(queue),
      (c) => c >= n,
      30_000,
      20,
    );
    const runs = await readRuns(db.pool, queue);
    const running = runs[runs.length - 1];
    assert.ok(running);
    await cancelJobs(store, { ids: [running.job_id] });
  }
  // Every run has ended and given its slot back (finished_at set, no lease).
  await until(
    `${queue}: every cancelled run ended`,
    async () =>
      (
        await db.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) AND status = 'cancelled' AND finished_at IS NOT NULL AND locked_until IS NULL",
          [ids.map((r) => r.id)],
        )
      ).rows[0]?.n === 3,
    (done) => done,
    20_000,
    50,
  );
  return readRuns(db.pool, queue);
}

describe('a cancelled running job keeps its limit slot until its run has ended', () => {
  for (const queue of ['keyed', 'single']) {
    it(`${queue === 'keyed' ? 'perKeyConcurrency' : 'globalConcurrency'} 1: the next job starts only after the cancelled task stopped, even one that ignores its signal`, async () => {
      const runs = await cancelEachRunning(queue);
      const gaps = runs.slice(1).map((r, i) => r.started - (runs[i]?.ended as number));
      console.log(
        `${queue}: ${runs.length} runs; from a cancelled run's last sign of life to the next start: ${gaps.join(', ')} ms`,
      );
      assert.equal(runs.length, 3, 'each job ran once');
      assert.equal(maxOverlap(runs, Date.now()), 1, 'never two runs of the slot at once');
      for (const gap of gaps) assert.ok(gap >= 0, `a run started ${-gap} ms before the cancelled one stopped`);
      // The one that ignored its signal ran on after the cancel until its thread was taken.
      const second = runs[1];
      assert.ok(second && (second.ended as number) - second.started >= 400, 'the task ignoring its signal lived on');
    });
  }
});
