/**
 * A workflow child retried, and the parents it reads again: a fan-in child
 * dead-lettered by a bug in its task is retried once the bug is fixed (here:
 * a row in wf_release), after cleanup rounds, with `cleanup.retention` 0 and
 * with the default retention (rows backdated past it); its parents must still
 * be there with their results, and go once the child itself is gone. Then a
 * child whose parent was deleted (`jobs delete --force`, plain SQL): a retry
 * never waits for that parent, and the safety net settles it.
 * Supervisors are in process, with real worker threads.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deleteJobs, retryJobs } from '../../src/queue/admin/index.ts';
import { deleteOldJobs } from '../../src/queue/cleanup.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { settleStragglers } from '../../src/queue/settle.ts';
import type { Store } from '../../src/queue/sql.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { nextEvent, startSupervisor, testSettings } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { jobRow, runsOf, WF_TABLES } from '../helpers/workflow.ts';

let db: TestDatabase;
let store: Store;

before(async () => {
  db = await createTestDatabase('workflow_retry');
  store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query(WF_TABLES);
});

after(async () => {
  await db?.drop();
});

const status = async (id: string) => (await jobRow(db.pool, id)).status;
const kept = async (ids: string[]) =>
  (await db.pool.query('SELECT id::text FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids])).rows.map(
    (r) => r.id as string,
  );
const waitFor = (id: string, wanted: string, timeoutMs = 30_000) =>
  until(
    `job ${id} ${wanted}`,
    () => status(id),
    (s) => s === wanted,
    timeoutMs,
  );

/** Three parents returning { n: i }, and a fan-in child whose task fails until wf_release names it. */
async function fanIn(): Promise<{ parents: string[]; child: string }> {
  const ids = (
    await enqueueMany(db.pool, [
      ...[0, 1, 2].map((n) => ({ kind: 'wf_step', payload: { result: { n } } })),
      { kind: 'wf_step', payload: { failUnlessReleased: true }, dependsOn: [0, 1, 2].map((index) => ({ index })) },
    ])
  ).map((r) => r.id);
  return { parents: ids.slice(0, 3), child: ids[3] as string };
}

/** What the child's last run read through ctx.parents(): [id, result] pairs. */
async function lastRead(child: string): Promise<unknown[]> {
  const runs = await runsOf(db.pool, child);
  const parents = (runs[runs.length - 1]?.parents ?? []) as Array<{ id: string; result: unknown }>;
  return parents.map((p) => [p.id, p.result]);
}

/** Releases the child's bug and retries it, as `jobvisor jobs retry ID` does; waits until it is done. */
async function fixAndRetry(supervisor: Supervisor, child: string): Promise<void> {
  await db.pool.query('INSERT INTO wf_release (job_id) VALUES ($1)', [child]);
  const done = nextEvent(supervisor, 'job:completed', ({ jobs }) => jobs.some((j) => j.id === child), 30_000);
  const r = await runCliInProcess(db.url, ['jobs', 'retry', child]);
  assert.equal(r.code, 0, r.stderr);
  await done;
}

describe('a dead-lettered fan-in child, retried after cleanup', () => {
  it('with cleanup.retention 0: its parents stay while it is kept, the retry reads them, then they go', async () => {
    const supervisor = startSupervisor(db.url, {
      cleanup: { interval: '1s', retention: '0' },
      queues: { default: { concurrency: 4 } },
    });
    const cleaned: string[] = [];
    supervisor.events.on('jobs:cleaned', ({ rows }) => rows.forEach((r) => cleaned.push(`${r.kind}:${r.status}`)));
    await supervisor.start();
    try {
      const { parents, child } = await fanIn();
      await waitFor(child, 'failed');
      // A cancelled job cleaned up proves a cleanup round ran after the dead letter.
      const sentinel = (await enqueue(db.pool, 'wf_sentinel', {}, { delay: 3_600_000 })).id;
      await db.pool.query("UPDATE jobvisor.jobs SET status = 'cancelled', finished_at = now() WHERE id = $1", [
        sentinel,
      ]);
      await until(
        'a cleanup round after the dead letter',
        () => cleaned.includes('wf_sentinel:cancelled'),
        (yes) => yes,
        15_000,
      );
      assert.deepEqual(await kept(parents), parents, 'the parents of a dead letter are kept');
      await fixAndRetry(supervisor, child);
      assert.deepEqual(await lastRead(child), [
        [parents[0], { n: 0 }],
        [parents[1], { n: 1 }],
        [parents[2], { n: 2 }],
      ]);
      // The child, done, went in its completion (with its edges); its parents go at the next round.
      await until(
        'the parents cleaned up',
        () => kept([...parents, child]),
        (left) => left.length === 0,
        15_000,
      );
    } finally {
      await supervisor.stop();
    }
  });

  it('with the default retention (3d, dead letters 30d), 4 days on: the same, parents gone after the child', async () => {
    const { cleanup } = testSettings();
    const clean = () =>
      deleteOldJobs(store, { retentionMs: cleanup.retention, failedRetentionMs: cleanup.failedRetention, limit: 1000 });
    const age = (ids: string[], days: number) =>
      db.pool.query(
        `UPDATE jobvisor.jobs SET finished_at = now() - $2 * interval '1 day' WHERE id = ANY ($1::bigint[])`,
        [ids, days],
      );
    const supervisor = startSupervisor(db.url, { queues: { default: { concurrency: 4 } } });
    await supervisor.start();
    try {
      const { parents, child } = await fanIn();
      await waitFor(child, 'failed');
      await age([...parents, child], 4);
      await clean();
      assert.deepEqual(await kept([...parents, child]), [...parents, child]);
      await fixAndRetry(supervisor, child);
      assert.deepEqual((await lastRead(child)).length, 3);
      assert.deepEqual((await lastRead(child))[2], [parents[2], { n: 2 }]);
      await age([child], 4);
      await clean();
      assert.deepEqual(await kept([...parents, child]), parents, 'the child goes first');
      await clean();
      assert.deepEqual(await kept(parents), [], 'then its parents');
    } finally {
      await supervisor.stop();
    }
  });
});

describe('a child whose parent was deleted', () => {
  const add = async (options: Parameters<typeof enqueue>[3] = {}) =>
    (await enqueue(db.pool, 'wf_step', {}, options)).id;
  const edgesOf = async (id: string) =>
    (
      await db.pool.query(
        'SELECT count(*)::int AS n FROM jobvisor.job_dependencies WHERE child_id = $1 OR parent_id = $1',
        [id],
      )
    ).rows[0].n as number;

  it('jobs delete PARENT --force, then jobs retry CHILD: the child does not wait for the deleted parent', async () => {
    const [a, b] = [await add(), await add()];
    const c = await add({ dependsOn: [a, b] });
    const forced = await runCliInProcess(db.url, ['jobs', 'delete', a, '--force']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual(
      [await status(c), (await jobRow(db.pool, c)).last_error],
      ['cancelled', `parent ${a} was deleted`],
    );
    assert.equal(await edgesOf(a), 0, 'the deleted parent took its edges along');
    const retried = await runCliInProcess(db.url, ['jobs', 'retry', c]);
    assert.equal(retried.code, 0, retried.stderr);
    const row = await jobRow(db.pool, c);
    assert.deepEqual([row.status, row.parents_waiting], ['blocked', 1], 'waits for b only');
    await deleteJobs(store, { ids: [b] }, { force: true });
    await retryJobs(store, { ids: [c] });
    const alone = await jobRow(db.pool, c);
    assert.deepEqual([alone.status, alone.parents_waiting], ['pending', 0], 'no parent left: it runs');
  });

  it('a retry does not count an edge left to a parent that no longer exists', async () => {
    const a = await add();
    const c = await add({ dependsOn: [a] });
    await db.pool.query('DELETE FROM jobvisor.jobs WHERE id = $1', [a]); // by hand: the edge stays
    await db.pool.query("UPDATE jobvisor.jobs SET status = 'cancelled', finished_at = now() WHERE id = $1", [c]);
    await retryJobs(store, { ids: [c] });
    const row = await jobRow(db.pool, c);
    assert.deepEqual([row.status, row.parents_waiting], ['pending', 0]);
  });

  it('the safety net cancels a blocked child of a parent deleted by plain SQL, or releases one that runs anyway', async () => {
    const a = await add();
    const [c, anyway] = [await add({ dependsOn: [a] }), await add({ dependsOn: [a], onParentFailure: 'run' })];
    const g = await add({ dependsOn: [c] });
    await db.pool.query('DELETE FROM jobvisor.jobs WHERE id = $1', [a]);
    assert.ok((await settleStragglers(store, 100)) >= 1);
    const [rc, rg] = [await jobRow(db.pool, c), await jobRow(db.pool, g)];
    assert.deepEqual([rc.status, rc.last_error], ['cancelled', `parent ${a} was deleted`]);
    assert.deepEqual([rg.status, rg.last_error], ['cancelled', `parent ${c} is cancelled`]);
    assert.equal(await status(anyway), 'pending');
  });
});
