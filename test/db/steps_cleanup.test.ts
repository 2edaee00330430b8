/**
 * Steps and signals go with their job: cleanup, the keep-none completion
 * (cleanup.retention 0) and `jobs delete` delete a job's job_steps and
 * job_signals rows in the statement that deletes the job, and leave every
 * other job's alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deleteJobs } from '../../src/queue/admin/actions.ts';
import { deleteOldJobs } from '../../src/queue/cleanup.ts';
import { completeJobs } from '../../src/queue/complete.ts';
import { signal } from '../../src/queue/signal.ts';
import type { Store } from '../../src/queue/sql.ts';
import { loadSteps, recordStep } from '../../src/queue/steps.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let store: Store;

before(async () => {
  db = await createTestDatabase('steps_cleanup');
  store = { db: db.pool, schema: 'jobvisor' };
});

after(async () => {
  await db.drop();
});

let token = 1000;

/** A running job (owner 'o') with two recorded steps and a signal kept for it. */
async function jobWithSteps(): Promise<{ id: string; token: string }> {
  const t = String(++token);
  const { rows } = await db.pool.query(
    `INSERT INTO jobvisor.jobs (kind, status, locked_by, lease_token, attempts) VALUES ('k', 'running', 'o', $1, 1) RETURNING id`,
    [t],
  );
  const id = rows[0].id as string;
  assert.equal((await loadSteps(db.pool, 'jobvisor', id, t)).held, true);
  for (const name of ['a', 'b'])
    assert.ok(await recordStep(db.pool, 'jobvisor', { id, token: t, name, result: '1', ms: 1 }));
  assert.equal(await signal(db.pool, id, 'later', { x: 1 }), 'kept');
  return { id, token: t };
}

const left = async (ids: string[]) => {
  const { rows } = await db.pool.query(
    `SELECT (SELECT count(*) FROM jobvisor.job_steps WHERE job_id = ANY ($1::bigint[]))::int AS steps,
            (SELECT count(*) FROM jobvisor.job_signals WHERE job_id = ANY ($1::bigint[]))::int AS signals,
            (SELECT count(*) FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]))::int AS jobs`,
    [ids],
  );
  return rows[0];
};

describe('steps and signals go with their job', () => {
  it('in cleanup, past retention', async () => {
    const gone = await jobWithSteps();
    const kept = await jobWithSteps();
    await completeJobs(store, 'o', [gone.id, kept.id], [gone.token, kept.token]);
    await db.pool.query(`UPDATE jobvisor.jobs SET finished_at = now() - interval '2 days' WHERE id = $1`, [gone.id]);
    await deleteOldJobs(store, { retentionMs: 86_400_000, failedRetentionMs: 86_400_000, limit: 100 });
    assert.deepEqual(await left([gone.id]), { steps: 0, signals: 0, jobs: 0 });
    assert.deepEqual(await left([kept.id]), { steps: 2, signals: 1, jobs: 1 }, 'a job kept keeps its steps');
  });

  it('in the keep-none completion (cleanup.retention 0)', async () => {
    const j = await jobWithSteps();
    const other = await jobWithSteps();
    const fenced = await completeJobs(store, 'o', [j.id], [j.token], null, undefined, false);
    assert.equal(fenced.size, 0);
    assert.deepEqual(await left([j.id]), { steps: 0, signals: 0, jobs: 0 });
    assert.deepEqual(await left([other.id]), { steps: 2, signals: 1, jobs: 1 });
  });

  it('in `jobs delete`', async () => {
    const j = await jobWithSteps();
    await completeJobs(store, 'o', [j.id], [j.token]);
    assert.equal((await deleteJobs(store, { ids: [j.id] })).changed, 1);
    assert.deepEqual(await left([j.id]), { steps: 0, signals: 0, jobs: 0 });
  });
});
