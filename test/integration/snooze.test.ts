/**
 * Snoozes, end to end: real worker threads, a real PostgreSQL. A task that
 * snoozes (ctx.snooze or throw SnoozeError) puts its job back to pending at
 * now + delay without using an attempt, counted in `snoozes` and recorded in
 * the history; past jobs.maxSnoozes the job is dead-lettered with an error
 * naming the key. The fenced snooze write itself is tested beside the other
 * reports (results_progress.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryJobs } from '../../src/queue/admin/index.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { enqueuedThen } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile('snooze', {
  queues: { default: { concurrency: 4, jobsPerThread: 4 } },
  jobs: { maxSnoozes: 3 },
  backoff: { base: '1h', max: '1h', jitter: 0 },
  pool: { maxThreads: 1 },
});

const job = async (id: string) =>
  (
    await file.db.pool.query(
      `SELECT status, attempts, snoozes, last_error, errors, finished_at, result,
              extract(epoch FROM run_at - now()) AS due_in_s
         FROM jobvisor.jobs WHERE id = $1`,
      [id],
    )
  ).rows[0];

const settled = (id: string, check: (row: Awaited<ReturnType<typeof job>>) => boolean, what: string) =>
  until(`job ${id} ${what}`, () => job(id), check, 15_000);

describe('a task that snoozes', () => {
  for (const how of ['ctx', 'throw'] as const) {
    it(`(${how === 'ctx' ? 'ctx.snooze' : 'throw SnoozeError'}) goes back to pending at now + delay, its attempt given back`, async () => {
      const {
        id,
        event: [event],
      } = await enqueuedThen(file.supervisor, 'job:snoozed', () =>
        enqueue(file.db.pool, 'snooze', { how, delay: '1h' }),
      );
      assert.deepEqual(event.delaysMs, [3_600_000], 'job:snoozed (metrics, logs) after the write');
      const row = await settled(id, (r) => r.snoozes === 1, 'snoozed');
      assert.equal(row.status, 'pending');
      assert.equal(row.attempts, 0, 'the snooze did not use an attempt');
      assert.ok(Number(row.due_in_s) > 3590 && Number(row.due_in_s) <= 3600, `due in about an hour: ${row.due_in_s}`);
      assert.equal(row.last_error, null, 'a snooze is not an error');
      assert.equal(row.finished_at, null);
      assert.equal(row.errors.length, 1, 'the history records the snooze');
      const [entry] = row.errors;
      assert.equal(entry.snooze, true);
      assert.equal(entry.attempt, 1, 'the attempt the task was in');
      assert.equal(entry.error, undefined, 'a snooze entry carries no error');
      assert.ok(Math.abs(Date.parse(entry.until) - Date.parse(entry.at) - 3_600_000) < 1000, 'until = at + delay');
    });
  }

  it('runs again after its delay and finishes, attempts counting only the run that did not snooze', async () => {
    const { id } = await enqueue(file.db.pool, 'snooze', { delay: 20, times: 2 });
    const row = await settled(id, (r) => r.status === 'done', 'done');
    assert.equal(row.snoozes, 2);
    assert.equal(row.attempts, 1);
    assert.deepEqual(row.result, { snoozes: 2, attempt: 1 }, 'every run saw attempt 1');
    assert.equal(row.errors.filter((e: { snooze?: boolean }) => e.snooze).length, 2);
  });

  it('is dead-lettered past jobs.maxSnoozes, with an error naming the key', async () => {
    const { id } = await enqueue(file.db.pool, 'snooze', { delay: 0 });
    const row = await settled(id, (r) => r.status === 'failed', 'dead-lettered');
    assert.equal(row.snoozes, 3, 'three snoozes were allowed');
    assert.equal(row.attempts, 1, 'the refused snooze used its attempt');
    assert.match(row.last_error, /^TooManySnoozes: .*3 snoozes.*jobs\.maxSnoozes \(3\)/);
    assert.ok(row.finished_at);
    const last = row.errors.at(-1);
    assert.equal(last.error, row.last_error, 'the dead letter is in the history');
    // `jobs retry` starts it afresh: it may snooze jobs.maxSnoozes times again.
    await file.db.pool.query(`UPDATE jobvisor.jobs SET payload = '{"delay": "1h"}' WHERE id = $1`, [id]);
    assert.equal((await retryJobs({ db: file.db.pool, schema: 'jobvisor' }, { ids: [id] })).changed, 1);
    const again = await settled(id, (r) => r.status === 'pending' && r.snoozes === 1, 'snoozed afresh');
    assert.equal(again.attempts, 0);
  });

  it('fails the attempt (and only it) when the delay is not a duration', async () => {
    const { id } = await enqueue(file.db.pool, 'snooze', { delay: 'soon' });
    const row = await settled(id, (r) => r.status !== 'running' && r.attempts === 1, 'failed once');
    assert.equal(row.status, 'pending', 'an ordinary failed attempt: retried later');
    assert.equal(row.snoozes, 0);
    assert.match(row.last_error, /^RangeError: "soon" is not a duration/);
  });

  it('keeps failures in a full history: the oldest snooze gives way first', async () => {
    const { rows } = await file.db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload, errors, snoozes)
       SELECT 'snooze', '{"delay": "1h"}', jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(), 'error', 'Error: first failure'))
              || (SELECT jsonb_agg(jsonb_build_object('attempt', 2, 'at', now(), 'snooze', true, 'until', now())) FROM generate_series(1, 19)),
              0
       RETURNING id`,
    );
    const id = rows[0].id as string;
    const row = await settled(id, (r) => r.snoozes === 1, 'snoozed');
    assert.equal(row.errors.length, 20);
    assert.equal(row.errors[0].error, 'Error: first failure', 'the failure was kept');
    assert.equal(row.errors.filter((e: { snooze?: boolean }) => e.snooze).length, 19);
  });
});
