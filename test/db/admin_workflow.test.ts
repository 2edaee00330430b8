/**
 * Workflows in the admin API against a real PostgreSQL: a job's parents and
 * dependents with their statuses, the whole workflow a job belongs to (both
 * directions, diamonds, bounded), and the `blocked` status in stats, the
 * jobvisor_jobs gauge and the overview. Workflows are written in SQL
 * (test/helpers/workflow.ts).
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { InputError } from '../../src/errors.ts';
import { createDatabaseGauges } from '../../src/metrics/database_gauges.ts';
import { UNBOUNDED_LABELS } from '../../src/metrics/labels.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { listJobs, overview, relationsOf, stats, workflowOf } from '../../src/queue/admin/index.ts';
import { listQueues } from '../../src/queue/pause.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { fanIn, insertWorkflow } from '../helpers/workflow.ts';

let db: TestDatabase;
let store: Store;

before(async () => {
  db = await createTestDatabase('admin_workflow');
  store = { db: db.pool, schema: 'jobvisor' };
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.job_dependencies');
});
after(async () => {
  await db.drop();
});

describe('relationsOf', () => {
  it("lists a fan-in job's parents, unfinished first, with counts by status, and each parent's dependent", async () => {
    const nodes = fanIn(20);
    for (const i of [3, 7]) nodes[i] = { ...nodes[i]!, status: 'running' };
    const ids = await insertWorkflow(db.pool, nodes);
    const [merge, email] = [ids[20]!, ids[21]!];

    const r = await relationsOf(store, merge);
    assert.equal(r.parents.total, 20);
    assert.deepEqual(r.parents.byStatus, { done: 18, running: 2 });
    assert.deepEqual(
      r.parents.jobs.slice(0, 3).map((j) => [j.id, j.status]),
      [
        [ids[3], 'running'],
        [ids[7], 'running'],
        [ids[0], 'done'],
      ],
      'the parents still outstanding come first',
    );
    assert.deepEqual(r.parents.jobs[0], { id: ids[3], kind: 'render_page', queue: 'default', status: 'running' });
    assert.deepEqual(r.dependents, {
      jobs: [{ id: email, kind: 'email_pdf', queue: 'default', status: 'blocked' }],
      total: 1,
      byStatus: { blocked: 1 },
    });

    const page = await relationsOf(store, ids[0]!);
    assert.equal(page.parents.total, 0);
    assert.deepEqual(
      page.dependents.jobs.map((j) => j.id),
      [merge],
    );

    const few = await relationsOf(store, merge, 5);
    assert.equal(few.parents.jobs.length, 5, 'listed up to the limit');
    assert.equal(few.parents.total, 20, 'counted in full');
  });

  it('gives none for a job outside any workflow or one that does not exist, and refuses a bad id', async () => {
    const [alone] = await insertWorkflow(db.pool, [{ kind: 'k' }]);
    const none = { jobs: [], total: 0, byStatus: {} };
    assert.deepEqual(await relationsOf(store, alone!), { parents: none, dependents: none });
    assert.deepEqual(await relationsOf(store, '999999'), { parents: none, dependents: none });
    await assert.rejects(relationsOf(store, 'x; DROP TABLE jobvisor.jobs'), InputError);
  });
});

describe('workflowOf', () => {
  it('collects the whole workflow from any of its jobs, both directions, with the edges inside it', async () => {
    const ids = await insertWorkflow(db.pool, fanIn(20));
    // A second, unrelated workflow must not leak in.
    await insertWorkflow(db.pool, fanIn(2));
    for (const from of [ids[0]!, ids[20]!, ids[21]!]) {
      const w = await workflowOf(store, from);
      assert.equal(w.root, from);
      assert.equal(w.truncated, false);
      assert.deepEqual(
        w.nodes.map((n) => n.id),
        ids,
        `from ${from}`,
      );
      const merge = w.nodes.find((n) => n.id === ids[20]);
      assert.deepEqual(merge?.parents, ids.slice(0, 20));
      assert.deepEqual(w.nodes.find((n) => n.id === ids[21])?.parents, [ids[20]]);
      assert.deepEqual(w.nodes.find((n) => n.id === ids[0])?.parents, []);
    }
  });

  it('ends on a diamond (two paths to one job) and on a job outside any workflow', async () => {
    const ids = await insertWorkflow(db.pool, [
      { kind: 'a', status: 'done' },
      { kind: 'b', parents: [0], status: 'done' },
      { kind: 'c', parents: [0], status: 'failed' },
      { kind: 'd', parents: [1, 2], status: 'cancelled' },
    ]);
    const w = await workflowOf(store, ids[3]!);
    assert.deepEqual(
      w.nodes.map((n) => [n.kind, n.status, n.parents.length]),
      [
        ['a', 'done', 0],
        ['b', 'done', 1],
        ['c', 'failed', 1],
        ['d', 'cancelled', 2],
      ],
    );
    const [alone] = await insertWorkflow(db.pool, [{ kind: 'solo' }]);
    const single = await workflowOf(store, alone!);
    assert.deepEqual(
      single.nodes.map((n) => n.id),
      [alone],
    );
    assert.deepEqual((await workflowOf(store, '999999')).nodes, []);
    await assert.rejects(workflowOf(store, '0'), InputError);
  });

  it('stops at the limit, says it was truncated, and keeps the job asked about', async () => {
    const ids = await insertWorkflow(db.pool, fanIn(30));
    const w = await workflowOf(store, ids[31]!, 10);
    assert.equal(w.truncated, true);
    assert.equal(w.nodes.length, 10);
    assert.ok(
      w.nodes.some((n) => n.id === ids[31]),
      'the root is kept',
    );
    assert.ok(
      w.nodes.some((n) => n.id === ids[30]),
      'nearest first: its parent is kept',
    );
    const exact = await workflowOf(store, ids[31]!, 32);
    assert.equal(exact.truncated, false, 'exactly the limit is not truncated');
    assert.equal(exact.nodes.length, 32);
  });
});

describe('the blocked status', () => {
  it('is counted in stats, the jobvisor_jobs gauge, the overview, queues list, and filtered in lists', async () => {
    const ids = await insertWorkflow(db.pool, fanIn(3, 'pending'));
    const blocked = [ids[3]!, ids[4]!];

    const s = await stats(store);
    assert.deepEqual(
      s.counts.filter((c) => c.status === 'blocked'),
      [
        { queue: 'default', kind: 'email_pdf', status: 'blocked', count: 1 },
        { queue: 'default', kind: 'merge_pdf', status: 'blocked', count: 1 },
      ],
    );

    const metrics = createMetrics({ defaultMetrics: false });
    await createDatabaseGauges(store, metrics, 0, UNBOUNDED_LABELS, { countSpacing: 0 }).refresh();
    const values = (await metrics.registry.getSingleMetric('jobvisor_jobs')?.get())?.values ?? [];
    const gauge = new Map(values.map((v) => [Object.values(v.labels).join('/'), v.value]));
    assert.equal(gauge.get('default/merge_pdf/blocked'), 1);
    assert.equal(gauge.get('default/email_pdf/blocked'), 1);
    assert.equal(gauge.get('default/render_page/pending'), 3);

    const o = await overview(store);
    assert.deepEqual(
      o.queues.map((q) => [q.queue, q.pending, q.blocked]),
      [['default', 3, 2]],
    );

    const queues = await listQueues(db.pool);
    assert.deepEqual(
      queues.map((q) => [q.queue, q.pending, q.running, q.blocked]),
      [['default', 3, 0, 2]],
    );

    const list = await listJobs(store, { status: 'blocked' }, { limit: 10 });
    assert.deepEqual(
      list.jobs.map((j) => j.id),
      [...blocked].reverse(),
    );
  });
});
