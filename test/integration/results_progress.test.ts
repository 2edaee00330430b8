/**
 * What a running task reports back, end to end (real worker threads, a real
 * PostgreSQL, the real CLI): its return value in `result`, its ctx.progress()
 * values in `progress` (throttled to one write a second per job, counted by a
 * trigger), and the fence: a stale run -- its job re-queued and claimed again
 * under it -- can write no result, progress or snooze.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { completeJobs } from '../../src/queue/complete.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { writeProgress } from '../../src/queue/progress.ts';
import { snoozeJobs } from '../../src/queue/snooze.ts';
import { nextEvent } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';
import { runCli } from '../helpers/cli.ts';
import { GATE_TABLES, gateRunsOf, tellGate } from '../helpers/gate.ts';

const file = supervisedFile(
  'results_progress',
  {
    queues: { default: { concurrency: 10, jobsPerThread: 10 } },
    jobs: { timeout: '30s', lease: '3s', maxResultBytes: 1000 },
    backoff: { base: '1h', max: '1h', jitter: 0 },
    pool: { maxThreads: 1 },
  },
  {
    prepare: async (db) => {
      await db.pool.query(`
      CREATE TABLE report_gate (job_id bigint);
      ${GATE_TABLES}
      -- Every write that changes a job's progress, whoever makes it.
      CREATE TABLE progress_writes (job_id bigint, value jsonb, status text);
      CREATE FUNCTION log_progress() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO progress_writes VALUES (NEW.id, NEW.progress, NEW.status); RETURN NULL; END $$;
      CREATE TRIGGER jobs_progress_log AFTER UPDATE OF progress ON jobvisor.jobs
        FOR EACH ROW WHEN (NEW.progress IS DISTINCT FROM OLD.progress) EXECUTE FUNCTION log_progress();`);
    },
  },
);

const job = async (id: string) =>
  (
    await file.db.pool.query(
      'SELECT id, status, attempts, snoozes, last_error, result, progress FROM jobvisor.jobs WHERE id = $1',
      [id],
    )
  ).rows[0];
const settledAs = (id: string, status: string) =>
  until(
    `job ${id} ${status}`,
    () => job(id),
    (r) => r.status === status,
    15_000,
  );
const failedOnce = (id: string) =>
  until(
    `job ${id} failed once`,
    () => job(id),
    (r) => r.status === 'pending' && r.attempts === 1,
    15_000,
  );
const run = async (kind: string, payload: unknown) => (await enqueue(file.db.pool, kind, payload)).id;

const cli = (args: string[]) => runCli(file.db.url, args);

describe('a task result', () => {
  it('is stored as JSON and shown by jobs list --json, with progress and snoozes', async () => {
    const id = await run('report', { result: { sent: 3, to: ['a', 'é'] }, progress: [{ step: 'last' }] });
    await settledAs(id, 'done');
    const out = await cli(['jobs', 'list', '--kind', 'report', '--status', 'done', '--json']);
    assert.equal(out.code, 0, out.stderr);
    const row = out.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((r) => r.id === id);
    assert.deepEqual(row?.result, { sent: 3, to: ['a', 'é'] });
    assert.deepEqual(row?.progress, { step: 'last' });
    assert.equal(row?.snoozes, 0);
  });

  it('is NULL when the task returns nothing, and a JSON null or scalar is kept as such', async () => {
    const none = await run('report', {});
    const nul = await run('report', { result: null });
    const num = await run('report', { result: 42 });
    for (const id of [none, nul, num]) await settledAs(id, 'done');
    const rows = await file.db.pool.query(
      'SELECT id, result IS NULL AS sql_null, result FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
      [[none, nul, num]],
    );
    assert.deepEqual(
      rows.rows.map((r) => [r.sql_null, r.result]),
      [
        [true, null],
        [false, null],
        [false, 42],
      ],
    );
  });

  it('over jobs.maxResultBytes fails the attempt with an error naming the limit', async () => {
    const id = await run('report', { bigResult: 2000 });
    const row = await failedOnce(id);
    assert.match(
      row.last_error,
      /^ResultTooLarge: the task's return value is 2002 bytes of JSON, over jobs.maxResultBytes \(1000\)/,
    );
    assert.equal(row.result, null);
  });

  it('that JSON cannot hold (a BigInt, U+0000) fails the attempt with a clear error', async () => {
    const big = await run('report', { bigint: true });
    const nul = await run('report', { nulResult: true });
    assert.match(
      (await failedOnce(big)).last_error,
      /^ResultNotJson: the task's return value cannot be stored as JSON: .*BigInt/,
    );
    assert.match((await failedOnce(nul)).last_error, /^ResultNotJson: .*U\+0000/);
  });
});

describe('ctx.progress', () => {
  const writes = async (id: string) =>
    (await file.db.pool.query('SELECT value, status FROM progress_writes WHERE job_id = $1', [id])).rows;

  it('is visible while the job runs', async () => {
    const id = await run('report', { progress: [{ step: 1 }], hold: true });
    const row = await until(
      'progress written',
      () => job(id),
      (r) => r.progress !== null,
    );
    assert.equal(row.status, 'running');
    assert.deepEqual(row.progress, { step: 1 });
    await file.db.pool.query('INSERT INTO report_gate VALUES ($1)', [id]);
    await settledAs(id, 'done');
  });

  it('is throttled: 100 values in about 300 ms make at most 2 writes, the last value kept', async () => {
    const values = Array.from({ length: 100 }, (_, i) => ({ i }));
    const id = await run('report', { progress: values, gapMs: 3 });
    const row = await settledAs(id, 'done');
    assert.deepEqual(row.progress, { i: 99 });
    const w = await writes(id);
    assert.ok(w.length >= 1 && w.length <= 2, `writes: ${JSON.stringify(w)}`);
    assert.deepEqual(w.at(-1), { value: { i: 99 }, status: 'done' }, 'the last value came with the done write');
  });

  it('a failing progress write is dropped and reported; the job and the file.supervisor carry on', async () => {
    // Refuses progress writes to running rows only: the done write (with the last value) passes.
    await file.db.pool.query(`
      CREATE FUNCTION refuse_progress() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'progress refused'; END $$;
      CREATE TRIGGER jobs_refuse_progress BEFORE UPDATE OF progress ON jobvisor.jobs
        FOR EACH ROW WHEN (NEW.status = 'running' AND NEW.progress @> '{"refuse": true}') EXECUTE FUNCTION refuse_progress();`);
    try {
      const refused = nextEvent(file.supervisor, 'db:error', (e) => e.loop === 'progress');
      const id = await run('report', { progress: [{ refuse: true }], hold: true, result: 'fine' });
      const [event] = await refused;
      assert.match(String((event.err as Error).message), /progress refused/);
      assert.deepEqual((await job(id)).progress, null, 'nothing written');
      await file.db.pool.query('INSERT INTO report_gate VALUES ($1)', [id]);
      const row = await settledAs(id, 'done');
      assert.deepEqual([row.result, row.progress], ['fine', { refuse: true }], 'the done write carried the last value');
    } finally {
      await file.db.pool.query('DROP TRIGGER jobs_refuse_progress ON jobvisor.jobs');
    }
  });

  it('refuses a value over 4 KiB or not JSON: the attempt fails, naming why', async () => {
    const big = await run('report', { badProgress: 'big' });
    const bigint = await run('report', { badProgress: 'bigint' });
    assert.match(
      (await failedOnce(big)).last_error,
      /^ProgressTooLarge: the progress value is 5002 bytes of JSON, over the 4096-byte limit/,
    );
    assert.match((await failedOnce(bigint)).last_error, /^ProgressNotJson: /);
  });
});

describe('the fence', () => {
  /** A row as a claim leaves it: running, owned by sup-a under token 7. */
  async function claimed(): Promise<string> {
    const { rows } = await file.db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload, run_at, status, attempts, locked_by, lease_token, locked_until)
       VALUES ('nobody', '{}', now() + interval '1 day', 'running', 1, 'sup-a', 7, now() + interval '1 day') RETURNING id`,
    );
    return rows[0].id as string;
  }
  const reports = { results: ['{"r":1}'], progress: ['{"p":1}'] };

  it('keeps a stale claim from writing a result, progress or snooze', async () => {
    const id = await claimed();
    for (const [owner, token] of [
      ['sup-a', '6'],
      ['sup-b', '7'],
    ] as const) {
      assert.deepEqual([...(await completeJobs(file.store, owner, [id], [token], null, reports))], [id]);
      assert.deepEqual(await writeProgress(file.store, owner, [id], [token], ['{"p":2}']), []);
      assert.deepEqual(await snoozeJobs(file.store, owner, { ids: [id], tokens: [token], delaysMs: [1000] }, 100), []);
    }
    const row = await job(id);
    assert.deepEqual([row.status, row.attempts, row.snoozes, row.result, row.progress], ['running', 1, 0, null, null]);
    // The claim that holds the row writes.
    assert.deepEqual(await writeProgress(file.store, 'sup-a', [id], ['7'], ['{"p":3}']), [id]);
    assert.deepEqual([...(await completeJobs(file.store, 'sup-a', [id], ['7'], null, reports))], []);
    const done = await job(id);
    assert.deepEqual([done.status, done.result, done.progress], ['done', { r: 1 }, { p: 1 }]);
  });

  it('a snooze of a job that never ran leaves attempts at 0', async () => {
    const id = await claimed();
    await file.db.pool.query('UPDATE jobvisor.jobs SET attempts = 0 WHERE id = $1', [id]);
    const rows = await snoozeJobs(file.store, 'sup-a', { ids: [id], tokens: ['7'], delaysMs: [1000] }, 100);
    assert.deepEqual(rows, [{ id, status: 'pending', error: null }]);
    assert.equal((await job(id)).attempts, 0);
  });

  const runsOf = (id: string) => gateRunsOf(file.db.pool, id);
  const tell = (gateRun: number, action: 'done' | 'snooze') => tellGate(file.db.pool, gateRun, action);

  for (const action of ['done', 'snooze'] as const) {
    it(`a run whose job was re-queued under it cannot ${action === 'done' ? 'store its result and progress' : 'snooze the new run'}`, async () => {
      const id = await run('gate_report', {});
      const [first] = await until(
        'first run started',
        () => runsOf(id),
        (r) => r.length === 1,
      );
      // The plain-SQL re-queue of docs/guides/enqueueing.md, applied to the running job; the old run
      // ignores its signal and ends with `action` after the job was claimed again.
      await file.db.pool.query("UPDATE jobvisor.jobs SET status = 'pending', attempts = 0 WHERE id = $1", [id]);
      await tell(first.run, action);
      const [old, second] = await until(
        'second run started',
        () => runsOf(id),
        (r) => r.length === 2,
      );
      assert.equal(old.how, action);
      const row = await job(id);
      assert.deepEqual(
        [row.status, row.snoozes, row.result, row.progress],
        ['running', 0, null, null],
        'nothing of the stale run was written',
      );
      await tell(second.run, 'done');
      const done = await settledAs(id, 'done');
      assert.deepEqual([done.result, done.progress, done.snoozes], [{ run: second.run }, { run: second.run }, 0]);
    });
  }
});
