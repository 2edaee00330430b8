/**
 * Cluster-wide limits with real supervisor processes and a real PostgreSQL.
 * Every run records its start and end from inside the task (flow_record.js);
 * the assertions are computed from those records:
 *   - globalConcurrency 3 over two supervisors: at most 3 runs at once;
 *   - perKeyConcurrency 1 over 50 keys, three supervisors: at most 1 run per key at once;
 *   - a hot key with 10,000 pending jobs enqueued first does not delay five other keys;
 *   - kill -9 of a supervisor holding both slots of globalConcurrency 2: nothing
 *     else starts until its leases expire and are reaped, then its slots come
 *     back and every job finishes (no slot leaks);
 * The rate limit over three supervisors: test/system/chaos_flow_rate.test.ts,
 * which runs alone (its throughput needs the CPUs), while these cases run
 * among the other files.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createRunsTable, maxOverlap, maxOverlapByKey, readRuns } from '../helpers/flow.ts';
import { fixtureFleet, type SpawnedSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;

const LEASE_MS = 3000;
const CONFIG = {
  pool: { maxThreads: 1, dbPoolSize: 10 },
  queues: {
    global: { concurrency: 5, jobsPerThread: 5, globalConcurrency: 3 },
    keyed: { concurrency: 10, jobsPerThread: 10, perKeyConcurrency: 1 },
    held: { concurrency: 5, jobsPerThread: 5, globalConcurrency: 2 },
  },
  jobs: { lease: `${LEASE_MS}ms` },
  reaper: { interval: '500ms' },
  poll: { interval: '1s' },
};

const fleet = fixtureFleet(() => db.url, CONFIG);
const supervisor = () => fleet.start();

const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs: number) =>
  until(what, check, (ok) => ok, timeoutMs, 100);

async function countOf(sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(sql, values);
  return rows[0]?.n ?? 0;
}

const doneIn = (queue: string) =>
  countOf("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = $1 AND status = 'done'", [queue]);

let working: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('chaos_flow_limits');
  await createRunsTable(db.pool);
  working = await Promise.all([supervisor(), supervisor(), supervisor()]);
});
after(async () => {
  await fleet.kill();
  await db.drop();
});

describe('cluster-wide limits', () => {
  it('globalConcurrency 3 over three supervisors: never more than 3 runs at once', async () => {
    const jobs: JobSpec[] = [];
    for (let i = 0; i < 90; i++) jobs.push({ kind: 'flow_record', queue: 'global', payload: { ms: 30 } });
    await enqueueMany(db.pool, jobs);
    await waitFor('every global job done', async () => (await doneIn('global')) === 90, 60_000);
    const runs = await readRuns(db.pool, 'global');
    const max = maxOverlap(runs, Date.now());
    console.log(`globalConcurrency 3: ${runs.length} runs, most at once ${max}`);
    assert.ok(max <= 3, `at most 3 at once, saw ${max}`);
    assert.ok(max >= 2, 'the supervisors did run jobs side by side (the check can fail)');
  });

  it('perKeyConcurrency 1 over 50 keys, three supervisors: at most 1 run per key at once', async () => {
    const jobs: JobSpec[] = [];
    for (let i = 0; i < 500; i++) {
      const key = `customer-${i % 50}`;
      jobs.push({ kind: 'flow_record', queue: 'keyed', payload: { ms: 15, key }, concurrencyKey: key });
    }
    await enqueueMany(db.pool, jobs);
    await waitFor('every keyed job done', async () => (await doneIn('keyed')) === 500, 90_000);
    const runs = await readRuns(db.pool, 'keyed');
    const byKey = maxOverlapByKey(runs, Date.now());
    const table = [...byKey].map(([key, most]) => `${key}:${most}`).join(' ');
    console.log(`perKeyConcurrency 1, most runs at once per key: ${table}`);
    assert.equal(byKey.size, 50);
    assert.equal(Math.max(...byKey.values()), 1, table);
    assert.ok(maxOverlap(runs, Date.now()) > 1, 'different keys did run at once');
    assert.ok(new Set(runs.map((r) => r.pid)).size >= 2, 'more than one supervisor ran them');
  });

  it('no head-of-line blocking: 10,000 pending jobs of one hot key, enqueued first, do not delay other keys', async () => {
    const hot: JobSpec[] = [];
    for (let i = 0; i < 10_000; i++)
      hot.push({ kind: 'flow_record', queue: 'keyed', payload: { ms: 5, key: 'hot' }, concurrencyKey: 'hot' });
    await enqueueMany(db.pool, hot);
    const cold: JobSpec[] = [];
    for (let i = 0; i < 5; i++)
      cold.push({ kind: 'flow_record', queue: 'keyed', payload: { key: `cold-${i}` }, concurrencyKey: `cold-${i}` });
    await enqueueMany(db.pool, cold);
    await waitFor(
      'every cold key ran',
      async () =>
        (await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE key LIKE 'cold-%' AND ended IS NOT NULL")) === 5,
      30_000,
    );
    const hotRuns = await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE key = 'hot'");
    await db.pool.query("UPDATE jobvisor.jobs SET status = 'cancelled' WHERE queue = 'keyed' AND status = 'pending'");
    console.log(`head of line: the five other keys ran while the hot key ran ${hotRuns} of its 10,000`);
    assert.ok(hotRuns < 100, `the other keys waited for ${hotRuns} runs of the hot key`);
  });

  it('kill -9 of the supervisor holding every slot: the limit holds until its leases are reaped, then the slots come back', async () => {
    // Only the victim serves `held` while it claims: the others are stopped first.
    await Promise.all(working.map((s) => s.stop()));
    const victim = await supervisor();
    const jobs: JobSpec[] = [];
    for (let i = 0; i < 2; i++)
      jobs.push({ kind: 'flow_record', queue: 'held', payload: { firstMs: 120_000, ms: 10 } });
    await enqueueMany(db.pool, jobs);
    await waitFor(
      'both slots taken',
      async () => (await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'held'")) === 2,
      30_000,
    );
    const more: JobSpec[] = [];
    for (let i = 0; i < 20; i++) more.push({ kind: 'flow_record', queue: 'held', payload: { ms: 20 } });
    await enqueueMany(db.pool, more);
    const survivors = await Promise.all([supervisor(), supervisor()]);
    await victim.stop('SIGKILL');
    const killedAt = Date.now();
    const { rows } = await db.pool.query<{ until: Date }>(
      "SELECT max(locked_until) AS until FROM jobvisor.jobs WHERE queue = 'held' AND status = 'running'",
    );
    const leaseEnd = rows[0]?.until?.getTime() ?? 0;
    await waitFor('every held job done', async () => (await doneIn('held')) === 22, 60_000);
    const runs = await readRuns(db.pool, 'held');
    const afterKill = runs.filter((r) => r.started > killedAt).map((r) => r.started);
    assert.ok(
      afterKill.length === 22,
      `every job ran after the kill (the two killed ones again), got ${afterKill.length}`,
    );
    assert.ok(Math.min(...afterKill) >= leaseEnd, "nothing started before the killed holder's leases ended");
    // The killed runs end at the kill; every other run has its own end.
    const max = maxOverlap(
      runs.map((r) => ({ ...r, ended: r.ended ?? killedAt })),
      Date.now(),
    );
    assert.ok(max <= 2, `at most 2 at once, saw ${max}`);
    const stuck = await countOf("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running'");
    assert.equal(stuck, 0, 'no slot is held by anyone');
    working = survivors;
    working.push(await supervisor());
  });
});
