/**
 * Workflows end to end, with a real supervisor and real worker threads: the
 * render → merge → e-mail graph, results read through ctx.parents() (also with
 * 10,000 parents), a child that runs after a failed parent and sees its
 * status, and flow control on jobs released from blocked (pause, a limit, a rate limit).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { pauseQueue, resumeQueue } from '../../src/queue/pause.ts';
import { maxStartsInWindow } from '../helpers/flow.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';
import { jobRow, runsOf, WF_TABLES } from '../helpers/workflow.ts';

const file = supervisedFile(
  'workflow_run',
  {
    queues: {
      default: { concurrency: 10, jobsPerThread: 10 },
      held: { concurrency: 5, jobsPerThread: 5 },
      one: { concurrency: 5, jobsPerThread: 5, globalConcurrency: 1 },
      rated: { concurrency: 10, jobsPerThread: 10, rateLimit: { count: 4, period: '1s' } },
    },
    jobs: { timeout: '30s', lease: '5s' },
    pool: { maxThreads: 2 },
  },
  {
    prepare: async (db) => {
      await db.pool.query(WF_TABLES);
    },
  },
);

const settled = (id: string, status: string) =>
  until(
    `job ${id} ${status}`,
    () => jobRow(file.db.pool, id),
    (r) => r.status === status,
    20_000,
  );

describe('a workflow run by a supervisor', () => {
  it('renders pages, merges them only after all are done, then e-mails, passing results on', async () => {
    const pages = Array.from({ length: 5 }, (_, i) => ({ kind: 'wf_step', payload: { result: { page: i } } }));
    const ids = (
      await enqueueMany(file.db.pool, [
        ...pages,
        { kind: 'wf_step', payload: { result: 'merged' }, dependsOn: pages.map((_, i) => ({ index: i })) },
        { kind: 'wf_step', payload: { result: 'sent' }, dependsOn: [{ index: 5 }] },
      ])
    ).map((r) => r.id);
    const [merge, email] = [ids[5] as string, ids[6] as string];
    await settled(email, 'done');
    const [mergeRun] = await runsOf(file.db.pool, merge);
    assert.ok(mergeRun);
    for (const page of ids.slice(0, 5)) {
      const row = await jobRow(file.db.pool, page);
      assert.ok(row.finished_at && row.finished_at <= mergeRun.started, `merge started before page ${page} was done`);
    }
    assert.deepEqual(
      mergeRun.parents,
      ids.slice(0, 5).map((id, i) => ({ id, kind: 'wf_step', status: 'done', result: { page: i } })),
    );
    const [emailRun] = await runsOf(file.db.pool, email);
    assert.deepEqual(emailRun?.parents, [{ id: merge, kind: 'wf_step', status: 'done', result: 'merged' }]);
    assert.equal((await runsOf(file.db.pool, merge)).length, 1);
  });

  it('gives a fan-in job all of its 10,000 parents', async () => {
    const { rows } = await file.db.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, status, finished_at, result, has_dependents)
       SELECT 'page', 'done', now(), jsonb_build_object('n', n), true FROM generate_series(1, 10000) AS n RETURNING id`,
    );
    const child = (await enqueue(file.db.pool, 'wf_step', {}, { dependsOn: rows.map((r) => r.id) })).id;
    await settled(child, 'done');
    const [run] = await runsOf(file.db.pool, child);
    const parents = run?.parents as Array<{ id: string; result: { n: number } }>;
    assert.equal(parents.length, 10_000);
    assert.equal(new Set(parents.map((p) => p.id)).size, 10_000);
    assert.equal(
      parents.reduce((sum, p) => sum + p.result.n, 0),
      (10_000 * 10_001) / 2,
    );
  });

  it('runs a child of a failed parent when asked, and shows it the status', async () => {
    const parent = (await enqueue(file.db.pool, 'wf_step', { fail: true }, { maxAttempts: 1 })).id;
    const child = (await enqueue(file.db.pool, 'wf_step', {}, { dependsOn: [parent], onParentFailure: 'run' })).id;
    const cancelled = (await enqueue(file.db.pool, 'wf_step', {}, { dependsOn: [parent] })).id;
    await settled(child, 'done');
    const [run] = await runsOf(file.db.pool, child);
    assert.deepEqual(run?.parents, [{ id: parent, kind: 'wf_step', status: 'failed', result: null }]);
    const row = await settled(cancelled, 'cancelled');
    assert.equal(row.last_error, `parent ${parent} is failed`);
    assert.equal((await runsOf(file.db.pool, cancelled)).length, 0);
  });
});

describe('a done parent re-queued while its child runs', () => {
  it('runs again; the child is not stopped, blocked or run again, and finishes once', async () => {
    const parent = (await enqueue(file.db.pool, 'wf_step', { result: 1 })).id;
    const other = (await enqueue(file.db.pool, 'wf_step', { hold: true })).id;
    const child = (await enqueue(file.db.pool, 'wf_step', { hold: true }, { dependsOn: [parent] })).id;
    const sibling = (await enqueue(file.db.pool, 'wf_step', {}, { dependsOn: [parent, other] })).id;
    await until(
      'the child running',
      () => runsOf(file.db.pool, child),
      (runs) => runs.length === 1,
    );
    await file.db.pool.query("UPDATE jobvisor.jobs SET status = 'pending', attempts = 0 WHERE id = $1", [parent]);
    await until(
      'the parent run twice',
      () => runsOf(file.db.pool, parent),
      (runs) => runs.length === 2,
    );
    await settled(parent, 'done');
    assert.equal((await jobRow(file.db.pool, child)).status, 'running');
    const s = await jobRow(file.db.pool, sibling);
    assert.deepEqual([s.status, s.parents_waiting], ['blocked', 1], 'the second success of the parent counts once');
    await file.db.pool.query('INSERT INTO wf_release VALUES ($1), ($2)', [child, other]);
    await settled(child, 'done');
    await settled(sibling, 'done');
    assert.equal((await runsOf(file.db.pool, child)).length, 1);
    assert.equal((await runsOf(file.db.pool, sibling)).length, 1);
  });
});

describe('flow control on released jobs', () => {
  it('a paused queue holds a released job until it is resumed', async () => {
    await pauseQueue(file.db.pool, 'held');
    const parent = (await enqueue(file.db.pool, 'wf_step', {})).id;
    const child = (await enqueue(file.db.pool, 'wf_step', {}, { dependsOn: [parent], queue: 'held' })).id;
    await settled(parent, 'done');
    await settled(child, 'pending');
    // A later plain job of another queue runs: the file.supervisor is claiming, the child's queue is not.
    const probe = (await enqueue(file.db.pool, 'wf_step', {})).id;
    await settled(probe, 'done');
    assert.equal((await jobRow(file.db.pool, child)).status, 'pending');
    await resumeQueue(file.db.pool, 'held');
    await settled(child, 'done');
  });

  it('a global concurrency limit of 1 holds for children released together', async () => {
    const parent = (await enqueue(file.db.pool, 'wf_step', { hold: true })).id;
    const children = (
      await enqueueMany(
        file.db.pool,
        Array.from({ length: 4 }, () => ({
          kind: 'wf_step',
          payload: { hold: true },
          queue: 'one',
          dependsOn: [parent],
        })),
      )
    ).map((r) => r.id);
    await file.db.pool.query('INSERT INTO wf_release VALUES ($1)', [parent]);
    await settled(parent, 'done');
    let maxRunning = 0;
    for (let i = 0; i < children.length; i++) {
      const first = await until(
        'a child running',
        async () =>
          (await file.db.pool.query("SELECT id::text FROM jobvisor.jobs WHERE queue = 'one' AND status = 'running'"))
            .rows,
        (rows) => rows.length > 0,
      );
      maxRunning = Math.max(maxRunning, first.length);
      const running = first[0]?.id as string;
      await file.db.pool.query('INSERT INTO wf_release VALUES ($1)', [running]);
      await settled(running, 'done');
    }
    assert.equal(maxRunning, 1);
    // Every run, from its start to its end: no two overlap. Not to its done write: a run that has
    // ended may lend its slot before its outcome is written (claim/transfers.ts), which a loaded
    // machine (load 15) showed as an overlap with the done write.
    const { rows } = await file.db.pool.query<{ overlaps: number }>(
      `WITH r AS (SELECT w.started, w.ended FROM wf_runs w WHERE w.job_id = ANY ($1::bigint[]))
       SELECT count(*)::int AS overlaps FROM r a JOIN r b ON a.started < b.started AND b.started < a.ended`,
      [children],
    );
    assert.equal(rows[0]?.overlaps, 0);
    assert.equal(
      (
        await file.db.pool.query('SELECT 1 FROM wf_runs WHERE ended IS NULL AND job_id = ANY ($1::bigint[])', [
          children,
        ])
      ).rows.length,
      0,
    );
    for (const id of children) assert.equal((await jobRow(file.db.pool, id)).status, 'done');
  });

  it('a rate limit of 4/s paces 12 children released by one done write', async () => {
    const parent = (await enqueue(file.db.pool, 'wf_step', {})).id;
    const children = (
      await enqueueMany(
        file.db.pool,
        Array.from({ length: 12 }, () => ({ kind: 'wf_step', payload: {}, queue: 'rated', dependsOn: [parent] })),
      )
    ).map((r) => r.id);
    for (const id of children) await settled(id, 'done');
    // The starts as the claims scheduled them: released together, they still take the
    // queue's slots one by one (4 in any second), so 12 need more than 2 s.
    const { rows } = await file.db.pool.query<{ at: string }>(
      'SELECT extract(epoch FROM started_at) * 1000 AS at FROM jobvisor.jobs WHERE id = ANY ($1::bigint[])',
      [children],
    );
    const starts = rows.map((r) => Number(r.at));
    assert.ok(maxStartsInWindow(starts, 1000) <= 4, `busiest second held ${maxStartsInWindow(starts, 1000)} starts`);
    assert.ok(Math.max(...starts) - Math.min(...starts) >= 2000, 'the 12 starts were spread over the limit');
  });
});
