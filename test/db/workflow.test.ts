/**
 * Workflows against a real PostgreSQL: enqueue with dependsOn (input checks
 * that write nothing, graphs by index), the release of a blocked job in the
 * same statement as its last parent's done write, the races of that release
 * (two completions at once, a parent done twice), and the cascade of a failed
 * parent. An enqueue racing its parent's completion: test/db/workflow_commit.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { completeJobs, failJobs } from '../../src/queue/complete.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { InputError } from '../../src/errors.ts';
import { deleteOldJobs } from '../../src/queue/cleanup.ts';
import { settleStragglers } from '../../src/queue/settle.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { jobRow, markRunning } from '../helpers/workflow.ts';

let db: TestDatabase;
let store: Store;
let token = 1000;

before(async () => {
  db = await createTestDatabase('workflow');
  store = { db: db.pool, schema: 'jobvisor' };
});

after(async () => {
  await db.drop();
});

const count = async () => Number((await db.pool.query('SELECT count(*) FROM jobvisor.jobs')).rows[0].count);
const edges = async () => Number((await db.pool.query('SELECT count(*) FROM jobvisor.job_dependencies')).rows[0].count);
const add = async (kind = 'step', options: Parameters<typeof enqueue>[3] = {}) =>
  (await enqueue(db.pool, kind, {}, options)).id;

/** Runs job `id` to done through the real done write, as a supervisor would. */
async function finish(id: string, on: Store = store): Promise<void> {
  const t = String(++token);
  await markRunning(db.pool, id, 'sup', t);
  assert.equal((await completeJobs(on, 'sup', [id], [t])).size, 0);
}

describe('enqueue with dependsOn', () => {
  it('inserts the job blocked, counting the parents not yet done', async () => {
    const a = await add();
    const b = await add();
    await finish(b);
    const c = await add('merge', { dependsOn: [a, Number(b), BigInt(a)] });
    const row = await jobRow(db.pool, c);
    assert.equal(row.status, 'blocked');
    assert.equal(row.parents_waiting, 1, 'b is done already; a is named twice but counts once');
  });

  it('inserts it pending when every parent is done already', async () => {
    const a = await add();
    await finish(a);
    const c = await add('merge', { dependsOn: [a] });
    assert.equal((await jobRow(db.pool, c)).status, 'pending');
  });

  it('refuses a missing parent, an empty list, a bad id or option, and writes nothing', async () => {
    const a = await add();
    const before = [await count(), await edges()];
    await assert.rejects(add('merge', { dependsOn: [a, '999999999'] }), (err: Error) => {
      assert.ok(err instanceof InputError);
      assert.match(err.message, /no job 999999999/);
      return true;
    });
    await assert.rejects(add('merge', { dependsOn: [] }), InputError);
    await assert.rejects(add('merge', { dependsOn: ['1.5'] }), InputError);
    await assert.rejects(add('merge', { dependsOn: [-3] }), InputError);
    await assert.rejects(add('merge', { dependsOn: [a], onParentFailure: 'skip' as 'run' }), InputError);
    await assert.rejects(add('merge', { onParentFailure: 'run' }), /needs dependsOn/);
    await assert.rejects(add('merge', { dependsOn: [{ index: 0 }] as never }), /only for enqueueMany/);
    assert.deepEqual([await count(), await edges()], before);
    const { rows } = await db.pool.query('SELECT has_dependents FROM jobvisor.jobs WHERE id = $1', [a]);
    assert.equal(rows[0].has_dependents, null, 'the existing parent is not flagged by a refused enqueue');
  });

  it('refuses a missing parent inside a transaction without aborting it', async () => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await assert.rejects(enqueue(client, 'merge', {}, { dependsOn: ['888888888'] }), InputError);
      assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  it('adds a whole graph in one enqueueMany, by index, and refuses forward or self references', async () => {
    const pages = Array.from({ length: 3 }, (_, i) => ({ kind: 'page', payload: { page: i } }));
    const ids = await enqueueMany(db.pool, [
      ...pages,
      { kind: 'merge', dependsOn: [{ index: 0 }, { index: 1 }, { index: 2 }] },
      { kind: 'email', dependsOn: [{ index: 3 }] },
    ]);
    const [merge, email] = [ids[3]?.id as string, ids[4]?.id as string];
    assert.equal((await jobRow(db.pool, merge)).parents_waiting, 3);
    assert.equal((await jobRow(db.pool, email)).parents_waiting, 1);
    const { rows } = await db.pool.query(
      'SELECT parent_id::text AS parent FROM jobvisor.job_dependencies WHERE child_id = $1 ORDER BY parent_id',
      [merge],
    );
    assert.deepEqual(
      rows.map((r) => r.parent),
      ids.slice(0, 3).map((r) => r.id),
    );
    const before = [await count(), await edges()];
    await assert.rejects(enqueueMany(db.pool, [{ kind: 'a', dependsOn: [{ index: 0 }] }]), /earlier job/);
    await assert.rejects(
      enqueueMany(db.pool, [{ kind: 'a' }, { kind: 'b', dependsOn: [{ index: 2 }] }, { kind: 'c' }]),
      /jobs\[1\]\.dependsOn\[0\]: index must name an earlier job/,
    );
    await assert.rejects(
      enqueueMany(db.pool, [
        { kind: 'a', uniqueKey: 'k' },
        { kind: 'b', dependsOn: [{ index: 0 }] },
      ]),
      /uniqueKey/,
    );
    assert.deepEqual([await count(), await edges()], before);
  });

  it('keeps plain jobs free of workflow columns', async () => {
    const id = await add('plain');
    const { rows } = await db.pool.query(
      'SELECT parents_waiting, on_parent_failure, has_dependents FROM jobvisor.jobs WHERE id = $1',
      [id],
    );
    assert.deepEqual(rows[0], { parents_waiting: null, on_parent_failure: null, has_dependents: null });
  });
});

describe('the release of a blocked job', () => {
  it('happens in the done write of its last parent, and makes it due', async () => {
    const [a, b] = [await add(), await add()];
    const c = await add('merge', { dependsOn: [a, b], runAt: new Date(Date.now() - 3600_000) });
    await finish(a);
    assert.equal((await jobRow(db.pool, c)).status, 'blocked');
    await finish(b);
    const { rows } = await db.pool.query(
      "SELECT status, run_at > now() - interval '1 minute' AS due_now FROM jobvisor.jobs WHERE id = $1",
      [c],
    );
    assert.deepEqual(rows[0], { status: 'pending', due_now: true });
  });

  it('is not missed when two completions of its last two parents overlap', async () => {
    const [a, b] = [await add(), await add()];
    const c = await add('merge', { dependsOn: [a, b] });
    const [ta, tb] = [String(++token), String(++token)];
    await markRunning(db.pool, a, 'one', ta);
    await markRunning(db.pool, b, 'two', tb);
    const one = await db.pool.connect();
    const two = await db.pool.connect();
    try {
      await one.query('BEGIN');
      await two.query('BEGIN');
      await completeJobs({ db: one, schema: 'jobvisor' }, 'one', [a], [ta]);
      // The second completion waits for the first's lock on the child, then re-reads its count.
      const second = completeJobs({ db: two, schema: 'jobvisor' }, 'two', [b], [tb]);
      await waitForLockWait();
      await one.query('COMMIT');
      await second;
      await two.query('COMMIT');
    } finally {
      one.release();
      two.release();
    }
    const row = await jobRow(db.pool, c);
    assert.deepEqual([row.status, row.parents_waiting], ['pending', 0]);
  });

  it('counts a parent once when it is re-queued and done again', async () => {
    const [a, b] = [await add(), await add()];
    const c = await add('merge', { dependsOn: [a, b] });
    await finish(a);
    await db.pool.query("UPDATE jobvisor.jobs SET status = 'pending', attempts = 0 WHERE id = $1", [a]);
    await finish(a);
    const row = await jobRow(db.pool, c);
    assert.deepEqual([row.status, row.parents_waiting], ['blocked', 1], 'b is not done: c must still wait');
    await finish(b);
    assert.equal((await jobRow(db.pool, c)).status, 'pending');
  });
});

describe('a failed or cancelled parent', () => {
  it('cancels its dependents down the graph, naming the parent, unless they run anyway', async () => {
    const a = await add();
    const [c, keep] = [
      await add('merge', { dependsOn: [a] }),
      await add('merge', { dependsOn: [a], onParentFailure: 'run' }),
    ];
    const g = await add('email', { dependsOn: [c] });
    const t = String(++token);
    await markRunning(db.pool, a, 'sup', t);
    await failJobs(store, 'sup', { ids: [a], tokens: [t], permanent: [true], delaysMs: [0], errors: ['no'] });
    const [rc, rg, rk] = [await jobRow(db.pool, c), await jobRow(db.pool, g), await jobRow(db.pool, keep)];
    assert.equal(rc.status, 'cancelled');
    assert.equal(rc.last_error, `parent ${a} is failed`);
    assert.ok(rc.finished_at);
    assert.equal(rg.status, 'cancelled');
    assert.equal(rg.last_error, `parent ${c} is cancelled`);
    assert.equal(rk.status, 'pending', 'onParentFailure run: released');
  });

  it('leaves dependents alone on a retry that is not a dead letter', async () => {
    const a = await add();
    const c = await add('merge', { dependsOn: [a] });
    const t = String(++token);
    await markRunning(db.pool, a, 'sup', t);
    await failJobs(store, 'sup', { ids: [a], tokens: [t], permanent: [false], delaysMs: [0], errors: ['again'] });
    assert.equal((await jobRow(db.pool, c)).status, 'blocked');
  });
});

describe('cleanup and the safety net', () => {
  it('keeps a finished parent while a dependent is kept, deletes the edges with the child, then the parent', async () => {
    const a = await add();
    const c = await add('merge', { dependsOn: [a] });
    const plain = await add('plain');
    await finish(a);
    await finish(plain);
    await db.pool.query("UPDATE jobvisor.jobs SET finished_at = now() - interval '2 days' WHERE id IN ($1, $2)", [
      a,
      plain,
    ]);
    const clean = () => deleteOldJobs(store, { retentionMs: 3_600_000, failedRetentionMs: 3_600_000, limit: 1000 });
    await clean();
    const left = async (ids: string[]) =>
      (
        await db.pool.query('SELECT id::text FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids])
      ).rows.map((r) => r.id);
    assert.deepEqual(await left([a, plain, c]), [a, c], 'the plain job goes; the parent of a pending child stays');
    await finish(c);
    await db.pool.query("UPDATE jobvisor.jobs SET finished_at = now() - interval '2 days' WHERE id = $1", [c]);
    await clean();
    assert.deepEqual(await left([a, c]), [a], 'the child goes first; the parent at the next round');
    await clean();
    assert.deepEqual(await left([a, c]), []);
    const { rows } = await db.pool.query(
      'SELECT count(*)::int AS n FROM jobvisor.job_dependencies WHERE child_id = $1',
      [c],
    );
    assert.equal(rows[0].n, 0);
  });

  it('releases a child whose parent was marked done by plain SQL', async () => {
    const a = await add();
    const c = await add('merge', { dependsOn: [a] });
    await db.pool.query("UPDATE jobvisor.jobs SET status = 'done', finished_at = now() WHERE id = $1", [a]);
    assert.equal((await jobRow(db.pool, c)).status, 'blocked');
    assert.ok((await settleStragglers(store, 100)) >= 1);
    assert.equal((await jobRow(db.pool, c)).status, 'pending');
  });
});

/** Resolves once some backend of this database waits for a lock. */
async function waitForLockWait(): Promise<void> {
  const probe = new pg.Client({ connectionString: db.url });
  await probe.connect();
  try {
    for (let i = 0; i < 500; i++) {
      const { rows } = await probe.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
      );
      if (rows[0].n > 0) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('no backend waited for a lock within 5 s');
  } finally {
    await probe.end();
  }
}
