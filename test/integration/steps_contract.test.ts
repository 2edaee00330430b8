/**
 * Steps, sleeps and waits leave the rest of the contract as it was: a
 * waiting job's workflow dependents stay blocked until it finishes; waiting
 * jobs hold no slot of a queue's global concurrency; sleeps and waits use
 * none of maxAttempts; a queue's timeout bounds one run, not the sleeps
 * between runs; `jobs retry` of a dead letter replays its recorded steps.
 * Real worker threads, a real PostgreSQL.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryJobs } from '../../src/queue/admin/actions.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { signal } from '../../src/queue/signal.ts';
import { until } from '../helpers/poll.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'steps_contract',
  {
    queues: {
      default: { concurrency: 4, jobsPerThread: 4 },
      limited: { concurrency: 1, jobsPerThread: 1, globalConcurrency: 1 },
      timed: { concurrency: 1, jobsPerThread: 1, timeout: '4s' },
    },
    reaper: { interval: '200ms' },
    backoff: { base: '10ms', max: '10ms', jitter: 0 },
    pool: { maxThreads: 2 },
  },
  {
    prepare: async (db) => {
      await db.pool.query('CREATE TABLE step_calls (job_id bigint, name text, attempt int, key text)');
    },
  },
);

const job = async (id: string) =>
  (
    await file.db.pool.query<{
      status: string;
      attempts: number;
      last_error: string | null;
      result: { results: unknown[] };
    }>('SELECT status, attempts, last_error, result FROM jobvisor.jobs WHERE id = $1', [id])
  ).rows[0];

const reaches = (id: string, status: string, timeoutMs = 20_000) =>
  until(
    `job ${id} ${status}`,
    () => job(id),
    (r) => r?.status === status,
    timeoutMs,
  );

const calls = async (id: string) =>
  (await file.db.pool.query('SELECT name, attempt FROM step_calls WHERE job_id = $1 ORDER BY name, attempt', [id]))
    .rows;

describe('what steps, sleeps and waits leave as it was', () => {
  it('a waiting job has not finished: its dependents stay blocked until it is done, then run', async () => {
    const parent = await enqueue(file.db.pool, 'durable', { ops: [['wait', 'approved', '1h']] });
    const child = await enqueue(file.db.pool, 'durable', { ops: [['step', 'c']] }, { dependsOn: [parent.id] });
    await reaches(parent.id, 'waiting');
    assert.equal((await job(child.id))?.status, 'blocked');
    assert.equal(await signal(file.db.pool, parent.id, 'approved', { ok: true }), 'woke');
    await reaches(parent.id, 'done');
    await reaches(child.id, 'done');
  });

  it('waiting jobs hold no slot of a global concurrency: all three wait at once, then all finish', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (
          await enqueue(
            file.db.pool,
            'durable',
            {
              ops: [
                ['step', 'a'],
                ['wait', 'go', '1h'],
              ],
            },
            { queue: 'limited' },
          )
        ).id,
      );
    for (const id of ids) await reaches(id, 'waiting');
    for (const id of ids) assert.equal(await signal(file.db.pool, id, 'go'), 'woke');
    for (const id of ids) await reaches(id, 'done');
  });

  it('sleeps and waits use no attempt: a job of maxAttempts 1 sleeps twice, times a wait out, and is done', async () => {
    const { id } = await enqueue(
      file.db.pool,
      'durable',
      {
        ops: [
          ['sleep', 'one', '50ms'],
          ['sleep', 'two', '50ms'],
          ['wait', 'never', '100ms'],
          ['step', 'end'],
        ],
      },
      { maxAttempts: 1 },
    );
    const row = await reaches(id, 'done');
    assert.equal(row?.attempts, 1);
    assert.deepEqual(row?.result.results.slice(0, 3), [null, null, { received: false }]);
  });

  it("a queue's timeout bounds one run, not the sleep between runs", async () => {
    // 1.5 s of work, a 3 s sleep, 1.5 s more: 6 s in all, each run 1.5 s, under the queue's 4 s timeout.
    const { id } = await enqueue(
      file.db.pool,
      'durable',
      {
        ops: [
          ['pause', 'before', 1500],
          ['sleep', 'nap', '3s'],
          ['pause', 'after', 1500],
        ],
      },
      { queue: 'timed', maxAttempts: 1 },
    );
    const row = await until(
      `job ${id} finished`,
      () => job(id),
      (r) => r?.status === 'done' || r?.status === 'failed',
      30_000,
    );
    assert.equal(row?.last_error, null);
    assert.equal(row?.status, 'done');
    const { rows } = await file.db.pool.query<{ s: number }>(
      'SELECT extract(epoch FROM finished_at - created_at)::float8 AS s FROM jobvisor.jobs WHERE id = $1',
      [id],
    );
    assert.ok((rows[0]?.s ?? 0) >= 4, `the job took ${rows[0]?.s} s in all, past the 4 s timeout`);
  });

  it('`jobs retry` of a dead letter, once fixed, replays its recorded steps without running them', async () => {
    const { id } = await enqueue(
      file.db.pool,
      'durable',
      { ops: [['step', 'charge'], ['fail'], ['step', 'email']], log: true },
      { maxAttempts: 1 },
    );
    await reaches(id, 'failed');
    // The fix: the task no longer fails there.
    await file.db.pool.query(
      `UPDATE jobvisor.jobs SET payload = '{"ops": [["step", "charge"], ["step", "email"]], "log": true}' WHERE id = $1`,
      [id],
    );
    const { changed } = await retryJobs({ db: file.db.pool, schema: 'jobvisor' }, { ids: [id] });
    assert.equal(changed, 1);
    const row = await reaches(id, 'done');
    assert.deepEqual(
      (await calls(id)).map((c) => c.name),
      ['charge', 'email'],
      "charge's fn ran once, in the run before the retry",
    );
    const charged = (
      await file.db.pool.query('SELECT attempt FROM jobvisor.job_steps WHERE job_id = $1 AND name = $2', [id, 'charge'])
    ).rows;
    assert.deepEqual(charged, [{ attempt: 1 }]);
    assert.equal(row?.result.results.length, 2);
  });

  it('shutdown inside a step hands the job back: the next run replays the steps before it, reruns that one', async () => {
    const serve = () =>
      startSupervisor(file.db.url, {
        queues: { shut: { concurrency: 1, jobsPerThread: 1 } },
        shutdown: { grace: '300ms' },
        pool: { maxThreads: 1 },
      });
    const first = serve();
    await first.start();
    const { id } = await enqueue(
      file.db.pool,
      'durable',
      {
        ops: [
          ['step', 'a'],
          ['slow', 'b', 5000],
          ['step', 'c'],
        ],
        log: true,
      },
      { queue: 'shut', maxAttempts: 1 },
    );
    await until(
      "step b's fn started",
      () => calls(id),
      (rows) => rows.some((r) => r.name === 'b'),
      20_000,
    );
    await first.stop();
    const handed = await job(id);
    assert.equal(handed?.status, 'pending', 'handed back, not failed');
    assert.equal(handed?.attempts, 0, 'its attempt given back');
    const second = serve();
    await second.start();
    try {
      const row = await reaches(id, 'done', 30_000);
      assert.equal(row?.attempts, 1);
    } finally {
      await second.stop();
    }
    const names = (await calls(id)).map((c) => c.name);
    assert.deepEqual(
      names.filter((n) => n === 'a' || n === 'b' || n === 'c'),
      ['a', 'b', 'b', 'c'],
      'a ran once (recorded before the shutdown), b twice (interrupted), c once',
    );
    const recorded = await file.db.pool.query<{ name: string }>(
      'SELECT name FROM jobvisor.job_steps WHERE job_id = $1 ORDER BY name',
      [id],
    );
    assert.deepEqual(
      recorded.rows.map((r) => r.name),
      ['a', 'b', 'c'],
    );
  });
});
