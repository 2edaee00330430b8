import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { nextEvent } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'supervisor',
  {
    queues: { default: { concurrency: 8, jobsPerThread: 4 }, cpu: { concurrency: 2, jobsPerThread: 1 } },
    jobs: { timeout: '5s', lease: '3s' },
    backoff: { base: '50ms', max: '200ms', jitter: 0 },
    pool: { maxThreads: 2 },
    poll: { interval: '30s' },
  },
  {
    prepare: async (db) => {
      await db.pool.query(
        'CREATE TABLE executions (job_id bigint, attempt int, pid int, finished boolean DEFAULT false, at timestamptz DEFAULT clock_timestamp())',
      );
    },
  },
);

async function job(id: string) {
  return (await file.db.pool.query('SELECT * FROM jobvisor.jobs WHERE id = $1', [id])).rows[0];
}

async function settled(id: string, status: string, timeoutMs = 15_000) {
  return until(
    `job ${id} ${status}`,
    () => job(id),
    (row) => row?.status === status,
    timeoutMs,
  );
}

describe('supervisor', () => {
  it('runs jobs on worker threads and records them done', async () => {
    const results = await enqueueMany(
      file.db.pool,
      Array.from({ length: 50 }, () => ({ kind: 'record', payload: {} })),
    );
    const ids = results.map((r) => r.id);
    await until(
      'condition',
      async () =>
        (
          await file.db.pool.query(
            "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'",
            [ids],
          )
        ).rows[0].n,
      (n) => n === 50,
      15_000,
    );
    const runs = await file.db.pool.query(
      'SELECT job_id, count(*)::int AS n FROM executions WHERE job_id = ANY($1) GROUP BY 1',
      [ids],
    );
    assert.equal(runs.rowCount, 50);
    assert.ok(
      runs.rows.every((r) => r.n === 1),
      'each job ran once',
    );
    const row = await job(ids[0] as string);
    assert.equal(row.attempts, 1);
    assert.ok(row.finished_at && row.started_at && row.locked_until === null);
    assert.equal(row.locked_by, file.supervisor.id);
  });

  it('wakes at once on a plain SQL insert (LISTEN/NOTIFY, not polling)', async () => {
    // The poll interval is 30 s: only the notification can start this job quickly.
    const t0 = Date.now();
    const { rows } = await file.db.pool.query(
      "INSERT INTO jobvisor.jobs (kind, payload) VALUES ('record', '{}') RETURNING id",
    );
    await settled(rows[0].id, 'done', 5000);
    assert.ok(Date.now() - t0 < 5000);
  });

  it('retries a failing task with backoff, then dead-letters it with its error history', async () => {
    const { id } = await enqueue(file.db.pool, 'fail', {}, { maxAttempts: 3 });
    const row = await settled(id, 'failed');
    assert.equal(row.attempts, 3);
    assert.equal(row.last_error, 'Error: boom on attempt 3');
    assert.deepEqual(
      row.errors.map((e: { attempt: number }) => e.attempt),
      [1, 2, 3],
    );
    assert.match(row.errors[0].error, /boom on attempt 1/);
    assert.ok(row.finished_at);
  });

  it('dead-letters a permanent error at once', async () => {
    const { id } = await enqueue(file.db.pool, 'permanent', {}, { maxAttempts: 5 });
    const row = await settled(id, 'failed');
    assert.equal(row.attempts, 1);
    assert.match(row.last_error, /input can never work/);
  });

  it('honours a delay the task asks for', async () => {
    const { id } = await enqueue(file.db.pool, 'retry_later', { ms: 3_600_000 }, { maxAttempts: 5 });
    const row = await until(
      'condition',
      () => job(id),
      (r) => r.status === 'pending' && r.attempts === 1,
      15_000,
    );
    const delay = new Date(row.run_at).getTime() - Date.now();
    assert.ok(delay > 3_500_000 && delay < 3_700_000, `run_at about an hour ahead, got ${delay} ms`);
  });

  it('retries an unknown kind with a clear error, and keeps serving others', async () => {
    const { id } = await enqueue(file.db.pool, 'no_such_task', {}, { maxAttempts: 1 });
    const other = await enqueue(file.db.pool, 'record', {});
    const row = await settled(id, 'failed');
    assert.match(row.last_error, /no task for kind "no_such_task"/);
    await settled(other.id, 'done');
  });

  it('stops a task stuck in for(;;){} at its timeout, terminating its thread, and retries it', async () => {
    const timedOut = nextEvent(file.supervisor, 'job:timeout');
    const { id } = await enqueue(file.db.pool, 'spin', {}, { queue: 'cpu', maxAttempts: 2 });
    await timedOut;
    const row = await until(
      'condition',
      () => job(id),
      (r) => r.attempts >= 1 && r.last_error !== null,
      15_000,
    );
    assert.match(row.last_error, /TimeoutError: job timed out after 5000 ms/);
    const after = await enqueue(file.db.pool, 'record', {}, { queue: 'cpu' });
    await settled(after.id, 'done');
    await settled(id, 'failed', 30_000);
  });

  it('fails only the job whose task calls process.exit; the pool keeps serving', async () => {
    const { id } = await enqueue(file.db.pool, 'exit', {}, { queue: 'cpu', maxAttempts: 1 });
    const row = await settled(id, 'failed');
    assert.match(row.last_error, /WorkerExited|exited/i);
    const next = await enqueue(file.db.pool, 'record', {}, { queue: 'cpu' });
    await settled(next.id, 'done');
  });

  it('fails the job whose task throws from a timer (uncaught error in the thread)', async () => {
    const { id } = await enqueue(file.db.pool, 'throw_later', {}, { queue: 'cpu', maxAttempts: 1 });
    const row = await settled(id, 'failed');
    assert.match(row.last_error, /thrown from a timer/);
  });

  it('runs a delayed job when it comes due, not before', async () => {
    const { id } = await enqueue(file.db.pool, 'record', {}, { delay: '1500ms' });
    const t0 = Date.now();
    await settled(id, 'done', 10_000);
    assert.ok(Date.now() - t0 >= 1200, 'not run before it was due');
  });

  it('runs higher priority first', async () => {
    const low = await enqueue(file.db.pool, 'record', {}, { queue: 'slow_lane', priority: 10 });
    const high = await enqueue(file.db.pool, 'record', {}, { queue: 'slow_lane', priority: -10 });
    const { claimJobs } = await import('../../src/queue/claim.ts');
    const [first] = await claimJobs(
      { db: file.db.pool, schema: 'jobvisor' },
      { owner: 'test', queue: 'slow_lane', limit: 1, leaseMs: 60_000 },
    );
    assert.equal(first?.id, high.id);
    assert.notEqual(first?.id, low.id);
  });
});
