/**
 * Operator actions on workflows, through the CLI (in process) and the admin
 * API: enqueue --depends-on, cancel cascading down the graph, retry of a
 * failed parent with and without --with-dependents, retry of a child going
 * back to blocked, and delete refusing a parent with live dependents.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cancelJobs, deleteJobs, retryJobs } from '../../src/queue/admin/index.ts';
import { failJobs } from '../../src/queue/complete.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import type { Store } from '../../src/queue/sql.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { jobRow, markRunning } from '../helpers/workflow.ts';

let db: TestDatabase;
let store: Store;
let token = 5000;

before(async () => {
  db = await createTestDatabase('workflow_admin');
  store = { db: db.pool, schema: 'jobvisor' };
});

after(async () => {
  await db.drop();
});

const add = async (options: Parameters<typeof enqueue>[3] = {}) => (await enqueue(db.pool, 'step', {}, options)).id;
const status = async (id: string) => (await jobRow(db.pool, id)).status;

async function deadLetter(id: string): Promise<void> {
  const t = String(++token);
  await markRunning(db.pool, id, 'sup', t);
  await failJobs(store, 'sup', { ids: [id], tokens: [t], permanent: [true], delaysMs: [0], errors: ['no'] });
}

describe('jobvisor enqueue --depends-on', () => {
  it('enqueues a blocked job, and refuses a missing parent with exit 2, writing nothing', async () => {
    const [a, b] = [await add(), await add()];
    const ok = await runCliInProcess(db.url, ['enqueue', 'merge', '{}', '--depends-on', `${a},${b}`]);
    assert.equal(ok.code, 0, ok.stderr);
    const id = ok.stdout.trim();
    assert.deepEqual([await status(id), (await jobRow(db.pool, id)).parents_waiting], ['blocked', 2]);
    const before = (await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.jobs')).rows[0].n;
    const bad = await runCliInProcess(db.url, ['enqueue', 'merge', '{}', '--depends-on', `${a},77777777`]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /no job 77777777/);
    const odd = await runCliInProcess(db.url, [
      'enqueue',
      'merge',
      '{}',
      '--depends-on',
      `${a}`,
      '--on-parent-failure',
      'maybe',
    ]);
    assert.equal(odd.code, 2);
    assert.match(odd.stderr, /onParentFailure/);
    assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.jobs')).rows[0].n, before);
  });
});

describe('cancel', () => {
  it('cancels a blocked job and its dependents, naming the parent', async () => {
    const a = await add();
    const b = await add({ dependsOn: [a] });
    const c = await add({ dependsOn: [b] });
    const run = await add({ dependsOn: [b], onParentFailure: 'run' });
    const result = await cancelJobs(store, { ids: [b] });
    assert.deepEqual(result.ids, [b]);
    assert.equal(await status(b), 'cancelled');
    const rc = await jobRow(db.pool, c);
    assert.deepEqual([rc.status, rc.last_error], ['cancelled', `parent ${b} is cancelled`]);
    assert.equal(await status(run), 'pending');
    assert.equal(await status(a), 'pending');
  });
});

describe('retry', () => {
  it('of a failed parent leaves its cancelled dependents alone, unless --with-dependents', async () => {
    const a = await add();
    const b = await add({ dependsOn: [a] });
    const c = await add({ dependsOn: [b] });
    await deadLetter(a);
    assert.deepEqual([await status(b), await status(c)], ['cancelled', 'cancelled']);
    const plain = await runCliInProcess(db.url, ['jobs', 'retry', a]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual([await status(a), await status(b), await status(c)], ['pending', 'cancelled', 'cancelled']);
    await deadLetter(a);
    const all = await runCliInProcess(db.url, ['jobs', 'retry', a, '--with-dependents']);
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /brought back 2 dependent job\(s\)/);
    const [rb, rc] = [await jobRow(db.pool, b), await jobRow(db.pool, c)];
    assert.deepEqual([rb.status, rb.parents_waiting, rc.status, rc.parents_waiting], ['blocked', 1, 'blocked', 1]);
  });

  it('of a cancelled child puts it back to blocked while a parent is not done', async () => {
    const a = await add();
    const b = await add({ dependsOn: [a] });
    await cancelJobs(store, { ids: [b] });
    await retryJobs(store, { ids: [b] });
    const row = await jobRow(db.pool, b);
    assert.deepEqual([row.status, row.parents_waiting], ['blocked', 1]);
  });
});

describe('delete', () => {
  it('refuses a parent whose dependents have not finished, unless forced (which cancels them)', async () => {
    const a = await add();
    const b = await add({ dependsOn: [a] });
    const refused = await runCliInProcess(db.url, ['jobs', 'delete', a]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr + refused.stdout, /dependents have not finished/);
    assert.equal(await status(a), 'pending');
    const forced = await deleteJobs(store, { ids: [a] }, { force: true });
    assert.deepEqual(forced.ids, [a]);
    const rb = await jobRow(db.pool, b);
    assert.deepEqual([rb.status, rb.last_error], ['cancelled', `parent ${a} was deleted`]);
    await deleteJobs(store, { ids: [b] });
    const { rows } = await db.pool.query(
      'SELECT count(*)::int AS n FROM jobvisor.job_dependencies WHERE child_id = $1',
      [b],
    );
    assert.equal(rows[0].n, 0, 'a deleted child takes its edges along');
  });
});
