/**
 * Keeping none (`cleanup.retention` 0): a done job is deleted in its
 * completion statement, fenced like the update it replaces. A workflow parent
 * is kept as done, with its result, for its children; a job that gained a
 * dependent while it ran takes the update too. A child deleted there leaves
 * its edges to the next cleanup round, which deletes its parents with them.
 * Cancelled and failed rows are still cleanup's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { InputError } from '../../src/errors.ts';
import { deleteOldJobs } from '../../src/queue/cleanup.ts';
import { completeJobs } from '../../src/queue/complete.ts';
import { enqueue, enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { jobRow, markRunning, WF_TABLES } from '../helpers/workflow.ts';

let db: TestDatabase;
let store: Store;
let token = 5000;

before(async () => {
  db = await createTestDatabase('keep_none');
  store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query(WF_TABLES);
});

after(async () => {
  await db?.drop();
});

const exists = async (id: string) =>
  (await db.pool.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1', [id])).rowCount === 1;

async function running(kind = 'step', options: Parameters<typeof enqueue>[3] = {}) {
  const { id } = await enqueue(db.pool, kind, {}, options);
  const t = String(++token);
  await markRunning(db.pool, id, 'sup', t);
  return { id: id, token: t };
}

describe('completeJobs keeping none', () => {
  it('deletes the done jobs it still holds, and reports none fenced', async () => {
    const a = await running();
    const b = await running();
    const fenced = await completeJobs(store, 'sup', [a.id, b.id], [a.token, b.token], null, undefined, false);
    assert.equal(fenced.size, 0);
    assert.equal(await exists(a.id), false);
    assert.equal(await exists(b.id), false);
  });

  it('deletes nothing it does not hold: a stale token, another owner, a cancelled job', async () => {
    const stale = await running();
    const other = await running();
    const cancelled = await running();
    await db.pool.query(`UPDATE jobvisor.jobs SET status = 'cancelled' WHERE id = $1`, [cancelled.id]);
    const fenced = await completeJobs(
      store,
      'sup',
      [stale.id, cancelled.id],
      ['1', cancelled.token],
      null,
      undefined,
      false,
    );
    assert.deepEqual([...fenced].sort(), [stale.id, cancelled.id].sort());
    const fencedOther = await completeJobs(store, 'other-sup', [other.id], [other.token], null, undefined, false);
    assert.deepEqual([...fencedOther], [other.id]);
    const ids = [stale.id, other.id, cancelled.id];
    for (const id of ids) assert.equal(await exists(id), true, `job ${id} is still there`);
    assert.equal((await jobRow(db.pool, stale.id)).status, 'running');
    assert.equal((await jobRow(db.pool, cancelled.id)).status, 'cancelled');
  });

  it('keeps a parent with dependents as done, with its result, and releases the child', async () => {
    const parent = await running();
    const plain = await running();
    const child = (await enqueue(db.pool, 'merge', {}, { dependsOn: [parent.id] })).id;
    const fenced = await completeJobs(
      store,
      'sup',
      [parent.id, plain.id],
      [parent.token, plain.token],
      null,
      { results: ['{"n":7}', '{"n":8}'], progress: [null, null] },
      false,
    );
    assert.equal(fenced.size, 0);
    assert.equal(await exists(plain.id), false);
    const kept = await jobRow(db.pool, parent.id);
    assert.equal(kept.status, 'done');
    assert.deepEqual(kept.result, { n: 7 });
    assert.equal((await jobRow(db.pool, child)).status, 'pending');
  });

  it("fails the COMMIT of a child's transaction when the parent's completion deleted it meanwhile, writing nothing", async () => {
    const parent = await running();
    const app = await db.pool.connect();
    let child: string;
    try {
      await app.query('BEGIN');
      child = (await enqueue(app, 'merge', {}, { dependsOn: [parent.id] })).id;
      // The completion does not wait for the open transaction (it used to, for as long as the
      // application kept it open): the parent has no committed dependent yet, so it is deleted.
      const sup = await db.pool.connect();
      try {
        await sup.query("SET lock_timeout = '2s'"); // a wait for the open transaction fails, not hangs
        const fenced = await completeJobs(
          { db: sup, schema: 'jobvisor' },
          'sup',
          [parent.id],
          [parent.token],
          null,
          undefined,
          false,
        );
        assert.equal(fenced.size, 0);
      } finally {
        await sup.query('RESET lock_timeout');
        sup.release();
      }
      assert.equal(await exists(parent.id), false);
      await assert.rejects(app.query('COMMIT'), (err: Error & { code?: string }) => {
        assert.equal(err.code, '23503');
        assert.match(
          err.message,
          new RegExp(`dependsOn: job ${parent.id} was deleted before this transaction committed`),
        );
        return true;
      });
    } finally {
      await app.query('ROLLBACK').catch(() => {});
      app.release();
    }
    assert.equal(await exists(child), false);
    const edges = await db.pool.query('SELECT 1 FROM jobvisor.job_dependencies WHERE child_id = $1', [child]);
    assert.equal(edges.rowCount, 0);
  });

  it('refuses a child of a parent its completion deleted first, writing nothing', async () => {
    const parent = await running();
    const app = await db.pool.connect();
    try {
      await app.query('BEGIN');
      await app.query('DELETE FROM jobvisor.jobs WHERE id = $1', [parent.id]); // holds the row as the completion would
      // Its refusal is awaited from the start: it can come in the same turn as COMMIT's reply.
      const refused = assert.rejects(enqueue(db.pool, 'merge', {}, { dependsOn: [parent.id] }), InputError);
      await waitForLockWait();
      await app.query('COMMIT');
      await refused;
    } finally {
      app.release();
    }
    const orphans = await db.pool.query('SELECT 1 FROM jobvisor.job_dependencies WHERE parent_id = $1', [parent.id]);
    assert.equal(orphans.rowCount, 0);
  });

  it('leaves no edge of a done child it deletes once the next cleanup round took its parent', async () => {
    const parent = await running();
    const { id } = await enqueue(db.pool, 'merge', {}, { dependsOn: [parent.id] });
    assert.equal((await completeJobs(store, 'sup', [parent.id], [parent.token], null, undefined, false)).size, 0);
    const child = { id: id, token: String(++token) };
    await markRunning(db.pool, child.id, 'sup', child.token);
    assert.equal((await completeJobs(store, 'sup', [child.id], [child.token], null, undefined, false)).size, 0);
    assert.equal(await exists(child.id), false);
    await deleteOldJobs(store, { retentionMs: 0, failedRetentionMs: 0, limit: 1000 });
    assert.equal(await exists(parent.id), false, 'the parent goes at the next cleanup round');
    const edges = await db.pool.query('SELECT 1 FROM jobvisor.job_dependencies WHERE child_id = $1', [child.id]);
    assert.equal(edges.rowCount, 0, 'no edge left behind');
  });

  it('keeps a job that gained a dependent while it ran', async () => {
    const parent = await running();
    await db.pool.query('UPDATE jobvisor.jobs SET has_dependents = true WHERE id = $1', [parent.id]);
    const fenced = await completeJobs(store, 'sup', [parent.id], [parent.token], null, undefined, false);
    assert.equal(fenced.size, 0);
    assert.equal((await jobRow(db.pool, parent.id)).status, 'done');
  });
});

describe('a supervisor with cleanup.retention 0', () => {
  it('leaves no done row behind, runs a workflow whose child reads its parent, and still cleans up dead letters', async () => {
    const supervisor = startSupervisor(db.url, {
      cleanup: { interval: '1s', retention: '0', failedRetention: '0' },
      queues: { default: { concurrency: 4 } },
    });
    const plain = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 20 }, () => ({ kind: 'wf_step', payload: {} })),
      )
    ).map((j) => j.id);
    const [parent, child] = (
      await enqueueMany(db.pool, [
        { kind: 'wf_step', payload: { result: { answer: 42 } } },
        { kind: 'wf_step', payload: {}, dependsOn: [{ index: 0 }] },
      ])
    ).map((j) => j.id);
    // Ten fan-ins of five parents: finished, they leave no row and no edge behind.
    const specs: JobSpec[] = [];
    for (let w = 0; w < 10; w++) {
      const base = specs.length;
      for (let p = 0; p < 5; p++) specs.push({ kind: 'wf_step', payload: {} });
      specs.push({ kind: 'wf_step', payload: {}, dependsOn: [0, 1, 2, 3, 4].map((p) => ({ index: base + p })) });
    }
    const fanIns = (await enqueueMany(db.pool, specs)).map((j) => j.id);
    const dead = (await enqueue(db.pool, 'wf_step', { fail: true }, { maxAttempts: 1 })).id;
    const done = new Set<string>();
    supervisor.events.on('job:completed', ({ jobs }) => jobs.forEach((j) => done.add(j.id)));
    // Counted from the start: under load a round can clean both up before the checks below end.
    const cleaned = { done: 0, failed: 0 };
    supervisor.events.on('jobs:cleaned', ({ rows }) =>
      rows.forEach((r) => {
        if (r.status === 'done' || r.status === 'failed') cleaned[r.status] += r.count;
      }),
    );
    await supervisor.start();
    try {
      await until(
        'every job done',
        () => done.size,
        (n) => n === 22 + fanIns.length,
        30_000,
      );
      for (const id of [...plain, child as string]) assert.equal(await exists(id), false, `done job ${id} is deleted`);
      // The parent is kept while its child lives; cleanup deletes it with the child's edge.
      const parents = (await db.pool.query('SELECT parents FROM wf_runs WHERE job_id = $1', [child])).rows[0]?.parents;
      assert.deepEqual(
        parents.map((p: { id: string; status: string; result: unknown }) => [p.id, p.status, p.result]),
        [[parent, 'done', { answer: 42 }]],
      );
      await until(
        'the parent and the dead letter cleaned up',
        async () => (await exists(parent as string)) || (await exists(dead)),
        (left) => !left,
        15_000,
      );
      await until(
        'the fan-ins cleaned up',
        () => count('SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[])', [fanIns]),
        (n) => n === 0,
        15_000,
      );
      const left = await db.pool.query('SELECT id FROM jobvisor.jobs WHERE id = ANY($1::bigint[])', [
        [...plain, parent, child, dead],
      ]);
      assert.deepEqual(left.rows, []);
      const edges = await count(
        'SELECT count(*)::int AS n FROM jobvisor.job_dependencies WHERE child_id = ANY ($1::bigint[]) OR parent_id = ANY ($1::bigint[])',
        [[...fanIns, parent, child]],
      );
      assert.equal(edges, 0, 'no edge left behind');
      // Cleanup deleted them, not the completion: the parent as done, the dead letter as failed
      // (with the done parents the tests above left in this database).
      await until(
        'both reported cleaned',
        () => ({ ...cleaned }),
        (c) => c.done >= 1 && c.failed >= 1,
        5_000,
      );
    } finally {
      await supervisor.stop();
    }
  });
});

async function count(sql: string, values: unknown[]): Promise<number> {
  return (await db.pool.query<{ n: number }>(sql, values)).rows[0]?.n ?? 0;
}

async function waitForLockWait(): Promise<void> {
  const probe = new pg.Client({ connectionString: db.url });
  await probe.connect();
  try {
    await until(
      'a backend waiting for a row lock',
      async () =>
        (
          await probe.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
          )
        ).rows[0].n,
      (n) => n > 0,
      5000,
      10,
    );
  } finally {
    await probe.end();
  }
}
