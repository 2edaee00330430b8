/**
 * A supervisor whose clock is off from the database's, under Debian's
 * libfaketime (test/helpers/faketime.ts), on a rate-limited queue.
 *
 * A rate-limited claim gives each job a start slot by the database's clock,
 * and the supervisor holds the job until then. Held by its own clock, 20 s
 * behind, every job was held 20 s: past its 15-s lease, which the heartbeat
 * did not renew for held jobs, so the reaper took it back, it was claimed
 * again (attempt + 1), and the old hold later ran a task whose outcome was
 * refused: 0 of 30 jobs done after 60 s. With a 4-s skew and a 3-s lease,
 * 27 of 30 were dead-lettered. Now each claim measures the database's clock
 * (db_clock.ts), held jobs' leases are renewed, and no hold outlives half a
 * lease: every job runs once, with its first attempt.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/poll.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { skewedEnv, skewSeen, skipUnlessFaketime } from '../helpers/faketime.ts';
import { createRunsTable } from '../helpers/flow.ts';
import { fixtureFleet, type SupervisorFleet } from '../helpers/supervisor.ts';

const skip = skipUnlessFaketime();
let db: TestDatabase;

const fleets: SupervisorFleet[] = [];
/** One supervisor `skewMs` off the real clock, with a lease of `lease`, serving `rated` (10 starts/s). */
async function skewedSupervisor(skewMs: number, lease: string) {
  const fleet = fixtureFleet(
    () => db.url,
    {
      pool: { maxThreads: 1, dbPoolSize: 4 },
      queues: { rated: { concurrency: 20, jobsPerThread: 20, rateLimit: { count: 10, period: '1s' } } },
      jobs: { lease },
      reaper: { interval: '500ms' },
      poll: { interval: '1s' },
    },
    skewedEnv(skewMs),
  );
  fleets.push(fleet);
  return fleet.start();
}

before(async () => {
  if (skip) return;
  db = await createTestDatabase('chaos_clock_skew');
  await createRunsTable(db.pool);
});
after(async () => {
  for (const fleet of fleets) await fleet.kill();
  await db?.drop();
});

async function thirtyJobsOnce(skewMs: number, lease: string) {
  await db.pool.query('TRUNCATE flow_runs; DELETE FROM jobvisor.jobs; DELETE FROM jobvisor.rate_starts');
  const supervisor = await skewedSupervisor(skewMs, lease);
  const jobs: JobSpec[] = [];
  for (let i = 0; i < 30; i++) jobs.push({ kind: 'flow_record', queue: 'rated', payload: { ms: 100 } });
  const ids = (await enqueueMany(db.pool, jobs)).map((r) => r.id);
  const began = Date.now();
  const done = async () =>
    (
      await db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) AND status = 'done'",
        [ids],
      )
    ).rows[0]?.n ?? 0;
  try {
    await until(`30 jobs done under a ${skewMs} ms skew`, done, (n) => n === 30, 30_000, 100);
  } finally {
    await supervisor.stop('SIGKILL');
  }
  const tookMs = Date.now() - began;
  const { rows } = await db.pool.query<{ attempts: number; runs: number; reaped: boolean }>(
    `SELECT j.attempts, (SELECT count(*)::int FROM flow_runs AS f WHERE f.job_id = j.id) AS runs,
            j.errors::text LIKE '%lease expired%' AS reaped
       FROM jobvisor.jobs AS j WHERE j.id = ANY($1::bigint[])`,
    [ids],
  );
  console.log(
    `skew ${skewMs} ms, lease ${lease}: 30 jobs done in ${tookMs} ms, ` +
      `${rows.reduce((s, r) => s + r.runs, 0)} task starts, most attempts ${Math.max(...rows.map((r) => r.attempts))}`,
  );
  assert.ok(
    rows.every((r) => r.attempts === 1),
    'every job was done by its first attempt',
  );
  assert.ok(
    rows.every((r) => r.runs === 1),
    'every task ran once',
  );
  assert.ok(!rows.some((r) => r.reaped), 'no lease was reaped');
  // 30 starts at 10 a second: about 3 s on a quiet machine, 8-13 s on a machine
  // at load 30; before, none was done after 30 s.
  assert.ok(tookMs < 25_000, `took ${tookMs} ms`);
}

describe('a supervisor whose clock is off from the database', { skip }, () => {
  it('libfaketime moves Date.now() and performance alike, in the main thread and in worker threads', async () => {
    const seen = await skewSeen(-20_000);
    console.log(`a child 20 s behind sees: ${JSON.stringify(seen)}`);
    for (const [clock, skew] of Object.entries(seen))
      assert.ok(Math.abs(skew + 20_000) < 1500, `${clock} is off by ${skew} ms, not about -20,000`);
    assert.ok(Math.abs(seen.workerDate - seen.mainDate) < 500, 'worker threads share the skew');
    assert.ok(Math.abs(seen.mainPerf - seen.mainDate) < 50, "performance's clock shares it");
  });

  it('20 s behind, rateLimit 10/1s, lease 15 s: 30 jobs of 100 ms each run once, first attempt', () =>
    thirtyJobsOnce(-20_000, '15s'));

  it('4 s behind with a lease of 3 s: the same', () => thirtyJobsOnce(-4000, '3s'));

  it('5 s ahead: the same', () => thirtyJobsOnce(5000, '3s'));
});
