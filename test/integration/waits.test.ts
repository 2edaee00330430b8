/**
 * Waits and signals, end to end: real worker threads, a real PostgreSQL. A
 * job that calls ctx.waitFor is parked (`waiting`: no lease, no thread, no
 * attempt) until its signal commits or its deadline passes (noticed by the
 * reaper's round); it then runs again from the top and waitFor resolves to
 * the signal or to `received: false`, the same in every later run. A signal
 * sent first is kept for the wait. signal() refuses what a job can never
 * read, with a clear error, unless told to ignore it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { signal, SignalError } from '../../src/queue/signal.ts';
import { createReaper } from '../../src/supervisor/loops/maintenance.ts';
import { enqueuedThen, nextEvent } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'waits',
  {
    queues: { default: { concurrency: 4, jobsPerThread: 4 } },
    // The test drives the reaper's round itself (runOnce) when it wants a timeout noticed.
    reaper: { interval: '1h' },
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
      `SELECT status, attempts, waiting_for, locked_until, result, last_error, run_at,
              extract(epoch FROM run_at - now()) AS due_in_s
         FROM jobvisor.jobs WHERE id = $1`,
      [id],
    )
  ).rows[0];

const waitRecord = async (id: string, name: string) =>
  (
    await file.db.pool.query(
      `SELECT kind, result, wake_at, finished_at FROM jobvisor.job_steps WHERE job_id = $1 AND name = $2`,
      [id, name],
    )
  ).rows[0];

const calls = async (id: string) =>
  (await file.db.pool.query('SELECT name, attempt FROM step_calls WHERE job_id = $1 ORDER BY name', [id])).rows;

/** Enqueues a job that steps, waits for `approved` (timeout 1 h) and steps again; resolves once it waits. */
async function parked(timeout: string | number = '1h'): Promise<string> {
  const waiting = await enqueuedThen(file.supervisor, 'job:waiting', () =>
    enqueue(file.db.pool, 'durable', {
      ops: [
        ['step', 'a'],
        ['wait', 'approved', timeout],
        ['step', 'b'],
      ],
      log: true,
    }),
  );
  return waiting.id;
}

describe('ctx.waitFor', () => {
  it('parks the job: waiting for its signal, due at its deadline, no lease, its attempt given back', async () => {
    const id = await parked();
    const row = await job(id);
    assert.equal(row.status, 'waiting');
    assert.equal(row.waiting_for, 'approved');
    assert.equal(row.locked_until, null);
    assert.equal(row.attempts, 0);
    assert.ok(Number(row.due_in_s) > 3590 && Number(row.due_in_s) <= 3600, `deadline in an hour: ${row.due_in_s}`);
    const rec = await waitRecord(id, 'approved');
    assert.equal(rec.kind, 'wait');
    assert.equal(rec.finished_at, null);
    assert.equal(rec.wake_at.getTime(), row.run_at.getTime());
    assert.deepEqual(await calls(id), [{ name: 'a', attempt: 1 }]);
  });

  it('resumes once its signal commits, resolving to the payload; steps before it do not run again', async () => {
    const id = await parked();
    assert.equal(await signal(file.db.pool, id, 'approved', { by: 'ann' }), 'woke');
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (r) => r.status === 'done',
    );
    assert.deepEqual(row.result.results[1], { received: true, payload: { by: 'ann' } });
    assert.equal(row.attempts, 1);
    assert.deepEqual(await calls(id), [
      { name: 'a', attempt: 1 },
      { name: 'b', attempt: 1 },
    ]);
    assert.deepEqual((await waitRecord(id, 'approved')).result, { received: true, payload: { by: 'ann' } });
  });

  it('takes a signal sent before the job got to its wait, without parking', async () => {
    const { id } = await enqueue(
      file.db.pool,
      'durable',
      { ops: [['wait', 'early', '1h']] },
      { runAt: new Date(Date.now() + 3_600_000) },
    );
    assert.equal(await signal(file.db.pool, id, 'early', 7), 'kept');
    await file.db.pool.query(`UPDATE jobvisor.jobs SET run_at = now() WHERE id = $1`, [id]);
    await file.db.pool.query(`NOTIFY jobvisor_jobs, 'default'`);
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (r) => r.status === 'done',
    );
    assert.deepEqual(row.result.results, [{ received: true, payload: 7 }]);
  });

  it('resolves to received: false after its deadline, noticed by the reaper round', async () => {
    const id = await parked(200);
    await until(
      `job ${id} past its deadline`,
      () => job(id),
      (r) => Number(r.due_in_s) < 0,
      5000,
    );
    const timedOut = nextEvent(file.supervisor, 'wait:timedOut', (e) => e.jobs.some((j) => j.id === id));
    // The reaper's round as the file.supervisor runs it, on the supervisor's events.
    await createReaper(
      { db: file.db.pool, schema: 'jobvisor' },
      { interval: 3_600_000, batchSize: 100 },
      file.supervisor.events,
    ).runOnce();
    await timedOut;
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (r) => r.status === 'done',
    );
    assert.deepEqual(row.result.results[1], { received: false });
    assert.equal(await signal(file.db.pool, id, 'approved', 1, { ignoreFinished: true }), 'ignored');
  });

  it('takes its deadline from the first park: a job that runs again early parks with the same one', async () => {
    const id = await parked();
    const first = await job(id);
    const again = nextEvent(file.supervisor, 'job:waiting', (e) => e.jobs.some((j) => j.id === id));
    await file.db.pool.query(`UPDATE jobvisor.jobs SET status = 'pending', run_at = now() WHERE id = $1`, [id]);
    await again;
    const row = await job(id);
    assert.equal(row.status, 'waiting');
    assert.equal(row.run_at.getTime(), first.run_at.getTime());
  });
});

describe('signal()', () => {
  it('refuses a finished, cancelled or missing job with a clear error, unless ignoreFinished', async () => {
    const { rows } = await file.db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, status, finished_at) VALUES ('k', 'done', now()), ('k', 'cancelled', now()) RETURNING id`,
    );
    const [done, cancelled] = rows.map((r) => r.id as string) as [string, string];
    await assert.rejects(signal(file.db.pool, done, 'x'), (err: SignalError) => {
      assert.ok(err instanceof SignalError);
      assert.equal(err.code, 'JOB_FINISHED');
      assert.equal(err.message, `job ${done} is done, so no wait of it can receive signal "x"`);
      return true;
    });
    await assert.rejects(signal(file.db.pool, cancelled, 'x'), /job \d+ is cancelled/);
    await assert.rejects(signal(file.db.pool, '999999999', 'x'), {
      code: 'JOB_NOT_FOUND',
      message: 'job 999999999 does not exist',
    });
    assert.equal(await signal(file.db.pool, done, 'x', null, { ignoreFinished: true }), 'ignored');
    assert.equal(await signal(file.db.pool, '999999999', 'x', null, { ignoreFinished: true }), 'ignored');
    const { rows: sent } = await file.db.pool.query('SELECT job_id FROM jobvisor.job_signals WHERE job_id = ANY ($1)', [
      [done, cancelled],
    ]);
    assert.deepEqual(sent, [], 'nothing was stored');
  });

  it('checks its input before sending anything', async () => {
    await assert.rejects(signal(file.db.pool, 'abc', 'x'), {
      code: 'INPUT_INVALID',
      message: /job id must be a positive integer/,
    });
    await assert.rejects(signal(file.db.pool, 1, ''), {
      code: 'INPUT_INVALID',
      message: /signal name must be a string of 1 to 200/,
    });
    await assert.rejects(signal(file.db.pool, 1, 'x', 'a'.repeat(70_000)), {
      code: 'INPUT_INVALID',
      message: /signal payload is 70002 bytes of JSON; the limit is 65536/,
    });
    await assert.rejects(signal(file.db.pool, 1, 'x', { n: 10n }), { code: 'INPUT_INVALID' });
  });

  it('keeps the first signal of a name: a repeat is a duplicate and changes nothing', async () => {
    const { id } = await enqueue(file.db.pool, 'durable', { ops: [] }, { runAt: new Date(Date.now() + 3_600_000) });
    assert.equal(await signal(file.db.pool, id, 'go', 1), 'kept');
    assert.equal(await signal(file.db.pool, id, 'go', 2), 'duplicate');
    const { rows } = await file.db.pool.query('SELECT payload FROM jobvisor.job_signals WHERE job_id = $1', [id]);
    assert.deepEqual(rows, [{ payload: 1 }]);
  });

  it("commits with the caller's transaction, and a rollback sends nothing", async () => {
    const id = await parked();
    const client = await file.db.pool.connect();
    try {
      await client.query('BEGIN');
      assert.equal(await signal(client, id, 'approved', 'no'), 'woke');
      await client.query('ROLLBACK');
      assert.equal((await job(id)).status, 'waiting', 'rolled back: still waiting');
      await client.query('BEGIN');
      assert.equal(await signal(client, id, 'approved', 'yes'), 'woke');
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (r) => r.status === 'done',
    );
    assert.deepEqual(row.result.results[1], { received: true, payload: 'yes' });
  });

  it('works from plain SQL', async () => {
    const id = await parked();
    const { rows } = await file.db.pool.query(`SELECT jobvisor.signal($1, 'approved', '{"by": "sql"}') AS outcome`, [
      id,
    ]);
    assert.equal(rows[0].outcome, 'woke');
    const row = await until(
      `job ${id} done`,
      () => job(id),
      (r) => r.status === 'done',
    );
    assert.deepEqual(row.result.results[1], { received: true, payload: { by: 'sql' } });
  });
});
