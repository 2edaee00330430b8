/**
 * A thread's durable-step reads are gathered (worker/step_reads.ts): the runs
 * that load their records, or reach a wait, in one turn of the event loop
 * share one statement, and each still gets its own answer: its records, its
 * wait's decision, or "no longer held" when its claim was lost. Read one run
 * at a time, 10,000 resumed runs queued on a thread's two ctx.db connections
 * (BENCHMARKS.md, "Durable steps").
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { claimJobs } from '../../src/queue/claim.ts';
import { signal } from '../../src/queue/signal.ts';
import type { Store } from '../../src/queue/sql.ts';
import { recordStep } from '../../src/queue/steps.ts';
import { parkWaits } from '../../src/queue/wait.ts';
import { createStepReads } from '../../src/worker/step_reads.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const N = 40;
let db: TestDatabase;
let store: Store;
/** The reads' own pool, whose statements are counted. */
let pool: pg.Pool;
let statements = 0;

before(async () => {
  db = await createTestDatabase('step_reads');
  store = { db: db.pool, schema: 'jobvisor' };
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    statements++;
    return query(...args);
  };
});

after(async () => {
  await pool.end();
  await db.drop();
});

/** N jobs of queue `q`, claimed by owner 'o'. */
async function claimN(q: string) {
  await db.pool.query(`INSERT INTO jobvisor.jobs (kind, queue) SELECT 'k', $1 FROM generate_series(1, $2)`, [q, N]);
  const jobs = await claimJobs(store, { owner: 'o', queue: q, limit: N, leaseMs: 60_000 });
  assert.equal(jobs.length, N);
  return jobs;
}

describe('gathered step reads', () => {
  it('load the records of the runs asking in one turn in one statement, each its own', async () => {
    const jobs = await claimN('loads');
    for (const [i, j] of jobs.entries())
      if (i % 2 === 0) assert.ok(await recordStep(db.pool, 'jobvisor', { ...j, name: `s${i}`, result: `${i}`, ms: 1 }));
    // One run lost its claim (cancelled): it gets "not held", the others their records.
    const lost = jobs[1] as (typeof jobs)[number];
    await db.pool.query(`UPDATE jobvisor.jobs SET status = 'cancelled', finished_at = now() WHERE id = $1`, [lost.id]);
    const reads = createStepReads(() => pool, 'jobvisor');
    statements = 0;
    const loaded = await Promise.all(jobs.map((j) => reads.load(j)));
    assert.equal(statements, 1, `${N} loads asked in one turn: one statement`);
    for (const [i, l] of loaded.entries()) {
      if (i === 1) {
        assert.equal(l.held, false);
        continue;
      }
      assert.equal(l.held, true, `job ${i} held`);
      assert.deepEqual(
        l.records.map((r) => [r.name, r.result]),
        i % 2 === 0 ? [[`s${i}`, i]] : [],
        `job ${i}: its own records`,
      );
    }
    // The first read flagged every held job, so deleting it deletes its records.
    const flagged = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'loads' AND has_steps`,
    );
    assert.equal(flagged.rows[0]?.n, N - 1);
  });

  it('decide the waits reached in one turn in one statement: signal, timeout or park', async () => {
    const jobs = await claimN('waits');
    // Park every run on wait "w" (deadline in an hour), then wake them as the signal would.
    const parked = await parkWaits(store, 'o', {
      ids: jobs.map((j) => j.id),
      tokens: jobs.map((j) => j.token),
      names: jobs.map(() => 'w'),
      untilMs: jobs.map(() => null),
      timeoutsMs: jobs.map(() => 3_600_000),
    });
    assert.equal(parked.length, N);
    for (const [i, j] of jobs.entries()) if (i % 3 === 0) assert.equal(await signal(db.pool, j.id, 'w', { i }), 'woke');
    // The rest: a third past their deadline, a third neither.
    await db.pool.query(
      `UPDATE jobvisor.job_steps SET wake_at = now() - interval '1 minute'
        WHERE job_id = ANY ($1::bigint[]) AND name = 'w'`,
      [jobs.filter((_, i) => i % 3 === 1).map((j) => j.id)],
    );
    await db.pool.query(
      `UPDATE jobvisor.jobs SET status = 'pending', run_at = now(), waiting_for = NULL WHERE queue = 'waits'`,
    );
    const again = await claimJobs(store, { owner: 'o', queue: 'waits', limit: N, leaseMs: 60_000 });
    assert.equal(again.length, N);
    const reads = createStepReads(() => pool, 'jobvisor');
    statements = 0;
    const decided = await Promise.all(again.map((j) => reads.takeWait({ ...j, name: 'w' })));
    assert.equal(statements, 1, `${N} waits reached in one turn: one statement`);
    const index = new Map(jobs.map((j, i) => [j.id, i]));
    for (const [k, d] of decided.entries()) {
      const i = index.get((again[k] as (typeof again)[number]).id) as number;
      assert.equal(d.held, true);
      if (i % 3 === 0) assert.deepEqual(d.result, { received: true, payload: { i } }, `job ${i}: its signal`);
      else if (i % 3 === 1) assert.deepEqual(d.result, { received: false }, `job ${i}: timed out`);
      else assert.equal(d.result, null, `job ${i}: neither yet`);
    }
    // Recorded for good: the decided ones, in one statement (one transaction's time).
    const rec = await db.pool.query<{ n: number; times: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT finished_at)::int AS times FROM jobvisor.job_steps
        WHERE job_id = ANY ($1::bigint[]) AND name = 'w' AND finished_at IS NOT NULL`,
      [jobs.map((j) => j.id)],
    );
    assert.deepEqual(rec.rows[0], { n: jobs.filter((_, i) => i % 3 !== 2).length, times: 1 });
  });
});
