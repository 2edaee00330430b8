/**
 * Durable sleeps (ctx.sleep), end to end: real worker threads, a real
 * PostgreSQL. A sleeping job is pending at its wake time with its attempt
 * given back and no snooze counted (jobs.maxSnoozes 0 here), its sleep
 * recorded; it runs again from the top at that time, finished steps return
 * their records, and the same sleep returns at once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runJobsNow } from '../../src/queue/admin/actions.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { enqueuedThen, nextEvent } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'sleep',
  {
    queues: { default: { concurrency: 4, jobsPerThread: 4 } },
    jobs: { maxSnoozes: 0 },
    pool: { maxThreads: 1 },
  },
  {
    prepare: async (db) => {
      await db.pool.query('CREATE TABLE step_calls (job_id bigint, name text, attempt int, key text)');
    },
  },
);

const job = async (id: string) =>
  (
    await file.db.pool.query(
      `SELECT status, attempts, snoozes, last_error, result, run_at, finished_at, has_steps,
              extract(epoch FROM run_at - now()) AS due_in_s
         FROM jobvisor.jobs WHERE id = $1`,
      [id],
    )
  ).rows[0];

const sleepRecord = async (id: string, name: string) =>
  (
    await file.db.pool.query(
      `SELECT kind, attempt, wake_at, finished_at, started_at FROM jobvisor.job_steps WHERE job_id = $1 AND name = $2`,
      [id, name],
    )
  ).rows[0];

const calls = async (id: string) =>
  (await file.db.pool.query('SELECT name, attempt FROM step_calls WHERE job_id = $1 ORDER BY name', [id])).rows;

describe('ctx.sleep', () => {
  it('puts the job back to pending at its wake time, using no attempt and no snooze, and records the sleep', async () => {
    const {
      id,
      event: [event],
    } = await enqueuedThen(file.supervisor, 'job:slept', () =>
      enqueue(file.db.pool, 'durable', {
        ops: [
          ['step', 'a'],
          ['sleep', 'nap', '1h'],
          ['step', 'b'],
        ],
        log: true,
      }),
    );
    const row = await until(
      `job ${id} sleeping`,
      () => job(id),
      (r) => r.status === 'pending',
      10_000,
    );
    assert.equal(row.attempts, 0, 'the sleep gave its attempt back');
    assert.equal(row.snoozes, 0, 'a sleep is not a snooze: jobs.maxSnoozes 0 did not dead-letter it');
    assert.ok(Number(row.due_in_s) > 3590 && Number(row.due_in_s) <= 3600, `due in about an hour: ${row.due_in_s}`);
    assert.equal(row.last_error, null);
    const rec = await sleepRecord(id, 'nap');
    assert.equal(rec.kind, 'sleep');
    assert.equal(rec.attempt, 1);
    assert.equal(rec.finished_at, null);
    assert.equal(rec.wake_at.getTime(), row.run_at.getTime(), 'run_at is the recorded wake time');
    assert.ok(Math.abs((event.wakesMs[0] as number) - row.run_at.getTime()) < 1, 'job:slept names the wake time');
    assert.deepEqual(await calls(id), [{ name: 'a', attempt: 1 }], 'b is after the sleep');
  });

  it('runs the job again from the top once its time has passed: steps replay, the sleep returns at once', async () => {
    const { id } = await enqueue(file.db.pool, 'durable', {
      ops: [
        ['step', 'a'],
        ['sleep', 'nap', '300ms'],
        ['step', 'b'],
        ['sleep', 'again', 200],
        ['step', 'c'],
      ],
      log: true,
    });
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (r) => r.status === 'done',
      15_000,
    );
    assert.equal(row.attempts, 1, 'three runs, one attempt');
    assert.deepEqual(await calls(id), [
      { name: 'a', attempt: 1 },
      { name: 'b', attempt: 1 },
      { name: 'c', attempt: 1 },
    ]);
    const nap = await sleepRecord(id, 'nap');
    assert.ok(nap.wake_at.getTime() - nap.started_at.getTime() >= 299, 'slept 300 ms from when it was reached');
    assert.ok(row.finished_at.getTime() >= nap.wake_at.getTime(), 'it did not finish before its wake time');
  });

  it('keeps the recorded wake time when the job runs again early (a run-now)', async () => {
    const { id } = await enqueue(file.db.pool, 'durable', { ops: [['sleep', 'nap', '1h']] });
    await until(
      `job ${id} sleeping`,
      () => job(id),
      (r) => r.status === 'pending' && r.has_steps,
    );
    const first = await sleepRecord(id, 'nap');
    const slept = nextEvent(file.supervisor, 'job:slept', (e) => e.jobs.some((j) => j.id === id));
    // Due now by plain SQL (not `jobs run-now`, which ends the sleep): the run finds the sleep not yet over.
    await file.db.pool.query(`UPDATE jobvisor.jobs SET run_at = now() WHERE id = $1`, [id]);
    await file.db.pool.query(`NOTIFY jobvisor_jobs, 'default'`);
    await slept;
    const row = await until(
      `job ${id} asleep again`,
      () => job(id),
      (r) => r.status === 'pending',
    );
    assert.equal(row.run_at.getTime(), first.wake_at.getTime(), 'the same wake time: a sleep never moves');
  });

  it("ends the sleep now on `jobs run-now` (the dashboard's Run now): the job runs on and finishes", async () => {
    const { id } = await enqueue(file.db.pool, 'durable', {
      ops: [
        ['sleep', 'nap', '1h'],
        ['value', 'after', 1],
      ],
    });
    await until(
      `job ${id} sleeping`,
      () => job(id),
      (r) => r.status === 'pending' && r.has_steps && r.due_in_s > 60,
    );
    const r = await runJobsNow({ db: file.db.pool, schema: 'jobvisor' }, { ids: [id] });
    assert.equal(r.changed, 1);
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (j) => j.status === 'done',
      30_000,
    );
    assert.deepEqual(row.result.results, [null, 1]);
    const nap = await sleepRecord(id, 'nap');
    assert.ok(nap.wake_at.getTime() <= row.finished_at.getTime(), 'the sleep ended when it was run now');
  });

  it('returns at once, recording nothing, for a time already past', async () => {
    const { id } = await enqueue(file.db.pool, 'durable', {
      ops: [
        ['sleep', 'past', '@2001-01-01T00:00:00Z'],
        ['sleep', 'zero', 0],
        ['value', 'v', 1],
      ],
    });
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (r) => r.status === 'done',
    );
    assert.deepEqual(row.result.results, [null, null, 1]);
    assert.equal(await sleepRecord(id, 'past'), undefined);
    assert.equal(await sleepRecord(id, 'zero'), undefined);
  });

  it('sleeps until a Date', async () => {
    const at = new Date(Date.now() + 3_600_000);
    const { id } = await enqueue(file.db.pool, 'durable', { ops: [['sleep', 'until', `@${at.toISOString()}`]] });
    const row = await until(
      `job ${id} sleeping`,
      () => job(id),
      (r) => r.status === 'pending' && r.has_steps,
    );
    assert.equal(row.run_at.getTime(), at.getTime());
  });

  it('fails the attempt (and only it) when the duration is not one', async () => {
    const { id } = await enqueue(file.db.pool, 'durable', { ops: [['sleep', 'bad', 'soon']] });
    const row = await until(
      `job ${id} failed once`,
      () => job(id),
      (r) => r.attempts === 1 && r.status !== 'running',
    );
    assert.match(row.last_error, /^RangeError: "soon" is not a duration/);
  });
});
