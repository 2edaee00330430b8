/**
 * Durable steps (ctx.step), end to end: real worker threads, a real
 * PostgreSQL. A recorded step returns its recorded result in a later run
 * without calling its fn (counted from inside the task, in step_calls); a
 * step that throws records nothing; names, caps and the fence are enforced
 * with clear errors; a job that never calls ctx.step reads and writes nothing
 * of job_steps.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { recordStep } from '../../src/queue/steps.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'steps',
  {
    queues: { default: { concurrency: 4, jobsPerThread: 4 } },
    jobs: { maxSteps: 5, maxStepResultBytes: 1000 },
    backoff: { base: '10ms', max: '10ms', jitter: 0 },
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
      `SELECT status, attempts, last_error, result, has_steps, snoozes FROM jobvisor.jobs WHERE id = $1`,
      [id],
    )
  ).rows[0];

const finished = (id: string) =>
  until(
    `job ${id} finished`,
    () => job(id),
    (r) => r.status === 'done' || r.status === 'failed',
    15_000,
  );

const records = async (id: string) =>
  (
    await file.db.pool.query(
      `SELECT name, kind, result, attempt, started_at <= finished_at AS ordered
         FROM jobvisor.job_steps WHERE job_id = $1 ORDER BY attempt, name`,
      [id],
    )
  ).rows;

const calls = async (id: string) =>
  (await file.db.pool.query('SELECT name, attempt FROM step_calls WHERE job_id = $1 ORDER BY name, attempt', [id]))
    .rows;

const run = async (ops: unknown[], log = true) => {
  const { id } = await enqueue(file.db.pool, 'durable', { ops, log });
  return id;
};

describe('ctx.step', () => {
  it('returns a recorded step without calling its fn again when the job runs again', async () => {
    const id = await run([['step', 'a'], ['step', 'b'], ['fail'], ['step', 'c']]);
    const row = await finished(id);
    assert.equal(row.status, 'done');
    assert.equal(row.attempts, 2, 'the first attempt failed after two steps');
    assert.deepEqual(
      await calls(id),
      [
        { name: 'a', attempt: 1 },
        { name: 'b', attempt: 1 },
        { name: 'c', attempt: 2 },
      ],
      'each fn ran once: a and b in attempt 1, c in attempt 2',
    );
    const at = new Date(0).toISOString();
    assert.deepEqual(row.result.results, [
      { name: 'a', attempt: 1, at },
      { name: 'b', attempt: 1, at },
      { name: 'c', attempt: 2, at },
    ]);
    const recs = await records(id);
    assert.deepEqual(
      recs.map((r) => [r.name, r.kind, r.attempt, r.ordered]),
      [
        ['a', 'step', 1, true],
        ['b', 'step', 1, true],
        ['c', 'step', 2, true],
      ],
    );
    assert.equal(row.has_steps, true);
  });

  it('returns the recorded JSON value in the run that records it too (a Date as its ISO text)', async () => {
    const id = await run([['step', 'a']]);
    const row = await finished(id);
    assert.equal(typeof row.result.results[0].at, 'string');
    assert.equal(row.result.results[0].at, new Date(0).toISOString());
  });

  it('records nothing for a step that throws; the attempt fails and the retry runs fn again', async () => {
    const id = await run([
      ['step', 'a'],
      ['throw', 't'],
      ['value', 'u', '$undefined'],
      ['value', 'n', null],
    ]);
    const row = await finished(id);
    assert.equal(row.status, 'done');
    assert.equal(row.attempts, 2);
    const recs = await records(id);
    assert.deepEqual(
      recs.map((r) => [r.name, r.attempt, r.result]),
      [
        ['a', 1, { name: 'a', attempt: 1, at: new Date(0).toISOString() }],
        ['n', 2, null],
        ['t', 2, 'ok'],
        ['u', 2, null],
      ],
    );
    const nulls = (
      await file.db.pool.query(
        `SELECT name, result IS NULL AS sql_null FROM jobvisor.job_steps WHERE job_id = $1 AND name IN ('u', 'n') ORDER BY name`,
        [id],
      )
    ).rows;
    assert.deepEqual(nulls, [
      { name: 'n', sql_null: false },
      { name: 'u', sql_null: true },
    ]);
    // In the job's result array undefined shows as null too; the records above tell them apart.
    assert.deepEqual(row.result.results.slice(1), ['ok', null, null]);
  });

  it('gives fn an idempotency key of its own: the job id and the step name', async () => {
    const id = await run([['key', 'charge']]);
    const row = await finished(id);
    assert.deepEqual(row.result.results, [`jobvisor:${id}:charge`]);
  });

  it('dead-letters a job that uses a name twice in one run, naming it', async () => {
    const id = await run([
      ['step', 'a'],
      ['value', 'a', 1],
    ]);
    const row = await finished(id);
    assert.equal(row.status, 'failed');
    assert.equal(row.attempts, 1, 'permanent: a retry would meet it again');
    assert.match(row.last_error, /^StepNameTaken: the step name "a" is used twice in one run/);
  });

  it('dead-letters a name recorded as another kind', async () => {
    const id = await run([
      ['step', 'a'],
      ['sleep', 'a', '1h'],
    ]);
    const row = await finished(id);
    assert.equal(row.status, 'failed');
    assert.match(row.last_error, /StepNameTaken/);
  });

  it('refuses a result over jobs.maxStepResultBytes and a step past jobs.maxSteps, recording neither', async () => {
    const big = await run([['value', 'big', 'x'.repeat(2000)]], false);
    const bigRow = await finished(big);
    assert.equal(bigRow.status, 'failed');
    assert.match(
      bigRow.last_error,
      /^StepResultTooLarge: the result of step "big" is 2002 bytes of JSON, over jobs.maxStepResultBytes \(1000\)/,
    );
    assert.deepEqual(await records(big), []);
    const many = await run(
      Array.from({ length: 6 }, (_, i) => ['value', `v${i}`, i]),
      false,
    );
    const manyRow = await finished(many);
    assert.equal(manyRow.status, 'failed');
    assert.match(
      manyRow.last_error,
      /^TooManySteps: job \d+ has 5 steps, sleeps and waits recorded, the most jobs.maxSteps \(5\)/,
    );
    assert.equal((await records(many)).length, 5);
  });

  it('refuses a result that is not JSON, recording nothing', async () => {
    const id = await run([['value', 'nul', '$nul']], false);
    const row = await finished(id);
    assert.equal(row.status, 'failed');
    assert.match(row.last_error, /^StepResultNotJson: the result of step "nul" cannot be stored: .*U\+0000/);
  });

  it('leaves a plain job alone: no flag, no records', async () => {
    const { id } = await enqueue(file.db.pool, 'chaos_noop', {});
    const row = await finished(id);
    assert.equal(row.has_steps, null);
    assert.deepEqual(await records(id), []);
  });
});

describe('the step record', () => {
  it('is written only while the run holds its claim (status running under its token)', async () => {
    const { rows } = await file.db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, status, locked_by, lease_token, attempts, run_at)
       VALUES ('held', 'running', 'o', 42, 1, now() + interval '1 day') RETURNING id`,
    );
    const id = rows[0].id as string;
    const step = (token: string, name: string) =>
      recordStep(file.db.pool, 'jobvisor', { id, token, name, result: '1', ms: 5 });
    assert.equal(await step('41', 'stale'), false, 'another claim of the job records nothing');
    assert.equal(await step('42', 'mine'), true);
    await file.db.pool.query(`UPDATE jobvisor.jobs SET status = 'cancelled' WHERE id = $1`, [id]);
    assert.equal(await step('42', 'after'), false, 'a cancelled run records nothing');
    assert.deepEqual(
      (await records(id)).map((r) => r.name),
      ['mine'],
    );
  });
});
