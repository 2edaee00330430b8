/**
 * A child enqueued in an application's open transaction (migration 023): the
 * enqueue locks nothing of its existing parents, so their heartbeat and their
 * outcome writes go on while the transaction stays open, and the COMMIT
 * settles the edges of parents that finished meanwhile (done: released;
 * failed: cancelled). The workflows guide's plain-SQL recipe does the same.
 * The chaos version, with supervisors as processes and a transaction open for
 * three leases, is test/system/chaos_open_transaction.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { completeJobs, failJobs } from '../../src/queue/complete.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { renewLeases } from '../../src/queue/lease.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { jobRow, markRunning } from '../helpers/workflow.ts';

let db: TestDatabase;
let store: Store;
let token = 1000;

before(async () => {
  db = await createTestDatabase('workflow_commit');
  store = { db: db.pool, schema: 'jobvisor' };
});

after(async () => {
  await db.drop();
});

const add = async (kind = 'step', options: Parameters<typeof enqueue>[3] = {}) =>
  (await enqueue(db.pool, kind, {}, options)).id;

/** Runs job `id` to done through the real done write, as a supervisor would. */
async function finish(id: string): Promise<void> {
  const t = String(++token);
  await markRunning(db.pool, id, 'sup', t);
  assert.equal((await completeJobs(store, 'sup', [id], [t])).size, 0);
}

/**
 * Runs `fn` with a store on a connection whose lock waits end after 2 s: a supervisor's write
 * that waits for the application's open transaction fails the test instead of hanging it.
 */
async function asSupervisor<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    await client.query("SET lock_timeout = '2s'");
    return await fn({ db: client, schema: 'jobvisor' });
  } finally {
    await client.query('RESET lock_timeout').catch(() => {});
    client.release();
  }
}

describe('a child enqueued in an open transaction', () => {
  it('never makes the parent wait for the open transaction of its child, and releases the child at its COMMIT', async () => {
    const a = await add();
    const t = String(++token);
    await markRunning(db.pool, a, 'sup', t);
    const app = await db.pool.connect();
    let c: string;
    try {
      await app.query('BEGIN');
      c = (await enqueue(app, 'merge', {}, { dependsOn: [a] })).id;
      // While the application's transaction stays open, the parent's heartbeat and done write
      // go through: the enqueue holds no lock on it (they waited until its COMMIT before).
      await asSupervisor(async (sup) => {
        assert.deepEqual([...(await renewLeases(sup, 'sup', [{ id: a, token: t }], 60_000))], [t]);
        assert.equal((await completeJobs(sup, 'sup', [a], [t])).size, 0);
      });
      // The done write could not see the uncommitted edge; the COMMIT settles it.
      await app.query('COMMIT');
    } catch (err) {
      await app.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      app.release();
    }
    const row = await jobRow(db.pool, c);
    assert.deepEqual([row.status, row.parents_waiting], ['pending', 0]);
    const { rows } = await db.pool.query('SELECT has_dependents FROM jobvisor.jobs WHERE id = $1', [a]);
    assert.equal(rows[0].has_dependents, true, 'flagged at the COMMIT');
  });

  it('releases a child enqueued in an open transaction when its parent is done after the COMMIT', async () => {
    const a = await add();
    const app = await db.pool.connect();
    let c: string;
    try {
      await app.query('BEGIN');
      c = (await enqueue(app, 'merge', {}, { dependsOn: [a] })).id;
      await app.query('COMMIT');
    } finally {
      app.release();
    }
    assert.equal((await jobRow(db.pool, c)).status, 'blocked');
    await finish(a);
    assert.equal((await jobRow(db.pool, c)).status, 'pending');
  });

  it('settles a child at its COMMIT when a parent failed meanwhile', async () => {
    const a = await add();
    const t = String(++token);
    await markRunning(db.pool, a, 'sup', t);
    const app = await db.pool.connect();
    let c: string;
    try {
      await app.query('BEGIN');
      c = (await enqueue(app, 'merge', {}, { dependsOn: [a] })).id;
      await asSupervisor((sup) =>
        failJobs(sup, 'sup', { ids: [a], tokens: [t], permanent: [true], delaysMs: [0], errors: ['no'] }),
      );
      await app.query('COMMIT');
    } finally {
      app.release();
    }
    const row = await jobRow(db.pool, c);
    assert.deepEqual([row.status, row.last_error], ['cancelled', `parent ${a} is failed`]);
  });

  it("the workflows guide's plain-SQL recipe: the parents finish while its transaction is open, and COMMIT settles the child", async () => {
    const guide = readFileSync(new URL('../../docs/guides/workflows.md', import.meta.url), 'utf8');
    const recipe = /```sql\nBEGIN;\n(WITH child AS[\s\S]*?new_edges[\s\S]*?)COMMIT;\n```/.exec(guide)?.[1];
    assert.ok(recipe, "docs/guides/workflows.md's plain-SQL workflow recipe");
    const [a, b] = [await add(), await add()];
    await finish(a);
    const tb = String(++token);
    await markRunning(db.pool, b, 'sup', tb);
    const app = await db.pool.connect();
    try {
      await app.query('BEGIN');
      await app.query(recipe.replaceAll('(12, 13)', `(${a}, ${b})`).replaceAll("'{12,13}'", `'{${a},${b}}'`));
      const fenced = await asSupervisor((sup) => completeJobs(sup, 'sup', [b], [tb]));
      assert.equal(fenced.size, 0, 'the done write does not wait');
      await app.query('COMMIT');
    } catch (err) {
      await app.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      app.release();
    }
    const { rows } = await db.pool.query(
      "SELECT id::text, status, parents_waiting FROM jobvisor.jobs WHERE kind = 'merge_pdf' ORDER BY id DESC LIMIT 1",
    );
    assert.deepEqual([rows[0]?.status, rows[0]?.parents_waiting], ['pending', 0]);
    const left = await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.new_edges');
    assert.equal(left.rows[0].n, 0, 'the marker row is gone with the COMMIT');
  });
});
