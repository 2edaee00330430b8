/**
 * A resumed job's durable-step records come with its claim: the supervisor
 * reads them right after the claim, in one statement for the claim's jobs that
 * have records (supervisor/claim/claimed_steps.ts), and the run starts with
 * them, sending no read of its own (worker/steps.ts). Plain jobs cost no
 * statement; a job whose records are large is sent without them and its run
 * reads them itself. Real PostgreSQL; statements counted on the pools.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { PlainClaim } from '../../src/supervisor/claim/plain.ts';
import { CARRIED_STEPS_BYTES } from '../../src/supervisor/claim/claimed_steps.ts';
import { recordsOf } from '../../src/queue/steps.ts';
import type { ClaimedJob } from '../../src/queue/types.ts';
import { createStepReads } from '../../src/worker/step_reads.ts';
import { DurableSteps, type StepEnv } from '../../src/worker/steps.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
/** Pools whose statements are counted: the supervisor's (claims) and a thread's (ctx.db). */
let supervisorPool: pg.Pool;
let threadPool: pg.Pool;
const count = { supervisor: 0, thread: 0 };

function counted(url: string, key: keyof typeof count): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    count[key]++;
    return query(...args);
  };
  return pool;
}

before(async () => {
  db = await createTestDatabase('claimed_steps');
  supervisorPool = counted(db.url, 'supervisor');
  threadPool = counted(db.url, 'thread');
});

after(async () => {
  await supervisorPool.end();
  await threadPool.end();
  await db.drop();
});

const claimOf = (queue: string) =>
  new PlainClaim({
    store: { db: supervisorPool, schema: 'jobvisor' },
    queue,
    owner: 'o',
    leaseMs: 60_000,
    maxPayloadBytes: 1 << 20,
    durable: () => false,
  });

/** `n` pending jobs of `queue`; with `records`, each has those (name, kind, result JSON text) recorded. */
async function jobsWith(queue: string, n: number, records: Array<[string, string, string | null]> = []) {
  const { rows } = await db.pool.query<{ id: string }>(
    `INSERT INTO jobvisor.jobs (kind, queue, has_steps)
     SELECT 'k', $1, CASE WHEN $3 THEN true END FROM generate_series(1, $2) RETURNING id::text AS id`,
    [queue, n, records.length > 0],
  );
  for (const [name, kind, result] of records)
    await db.pool.query(
      `INSERT INTO jobvisor.job_steps (job_id, name, kind, result, attempt, started_at, finished_at, wake_at)
       SELECT id, $2, $3, $4::jsonb, 1, now() - interval '1 minute', CASE WHEN $3 = 'step' THEN now() END,
              CASE WHEN $3 = 'sleep' THEN now() - interval '2 seconds' END
         FROM unnest($1::bigint[]) AS id`,
      [rows.map((r) => r.id), name, kind, result],
    );
  return rows.map((r) => r.id);
}

const env = (): StepEnv => ({
  db: () => threadPool,
  schema: 'jobvisor',
  reads: createStepReads(() => threadPool, 'jobvisor'),
  maxSteps: 1000,
  maxResultBytes: 1 << 20,
});

/** The run of `job` in its thread, with the records the supervisor sent (as entry.ts receives them). */
const runOf = (job: ClaimedJob) =>
  new DurableSteps(
    {
      id: job.id,
      token: job.token,
      attempt: job.attempt,
      ...(job.steps && { claimedSteps: { text: job.steps.text, nowMs: job.steps.nowMs, at: job.steps.at } }),
    },
    env(),
  );

describe('records read with the claim', () => {
  it('come with the jobs that have some, in one statement after the claim; plain jobs cost none', async () => {
    const resumed = await jobsWith('mixed', 30, [
      ['charge', 'step', '{"id": 7}'],
      ['nap', 'sleep', null],
    ]);
    const plain = await jobsWith('mixed', 30);
    count.supervisor = 0;
    const { jobs } = await claimOf('mixed').claim(100);
    assert.equal(jobs.length, 60);
    assert.equal(count.supervisor, 2, 'the claim, and one read of the records of its 30 resumed jobs');
    for (const job of jobs) {
      if (plain.includes(job.id)) {
        assert.equal(job.steps, undefined, `plain job ${job.id}: nothing read`);
        continue;
      }
      assert.ok(resumed.includes(job.id));
      const records = recordsOf(job.steps?.text ?? 'null');
      assert.deepEqual(
        records.map((r) => [r.name, r.kind, r.result, r.finished]).sort(),
        [
          ['charge', 'step', { id: 7 }, true],
          ['nap', 'sleep', undefined, false],
        ],
        `job ${job.id}: its records`,
      );
    }
    // A claim of plain jobs only sends the claim alone.
    await jobsWith('plain', 20);
    count.supervisor = 0;
    assert.equal((await claimOf('plain').claim(100)).jobs.length, 20);
    assert.equal(count.supervisor, 1, 'no read for plain jobs');
  });

  it('let the run replay, resume and record without reading them itself', async () => {
    await jobsWith('resume', 1, [
      ['charge', 'step', '{"id": 7}'],
      ['nap', 'sleep', null],
    ]);
    const [job] = (await claimOf('resume').claim(10)).jobs;
    assert.ok(job?.steps, 'records sent with the job');
    const steps = runOf(job);
    count.thread = 0;
    let called = false;
    const charged = await steps.step('charge', () => {
      called = true;
      return { id: 8 };
    });
    assert.deepEqual(charged, { id: 7 }, 'the recorded result');
    assert.equal(called, false, 'a recorded step does not run again');
    await steps.sleep('nap', '1h'); // recorded, its wake time past: returns at once
    assert.ok((steps.report.lateMs ?? 0) >= 2000, `lateness from the wake time: ${steps.report.lateMs} ms`);
    assert.equal(count.thread, 0, 'no read of its own');
    assert.equal(await steps.step('invoice', () => 'inv-1'), 'inv-1');
    assert.equal(count.thread, 1, 'the new step recorded, fenced, in one statement');
  });

  it('are not sent when large: the run reads them itself', async () => {
    // Random text does not compress: its stored size is its length.
    const big = JSON.stringify(
      Array.from({ length: CARRIED_STEPS_BYTES / 5 }, () => Math.random().toString(36).slice(2)).join(''),
    );
    await jobsWith('large', 1, [['fetch', 'step', big]]);
    const [job] = (await claimOf('large').claim(10)).jobs;
    assert.ok(job);
    assert.ok(job.steps === undefined, `not sent (${job.steps?.text.length} characters were)`);
    const steps = runOf(job);
    count.thread = 0;
    assert.equal(await steps.step('fetch', () => 'again'), JSON.parse(big));
    assert.equal(count.thread, 1, 'read by the run');
  });
});
