/**
 * createAdmin, the admin API's one handle, against a real PostgreSQL: each
 * method reads and changes the jobs its store-taking function does, on the pool
 * given once; its schema and statement bound hold for every statement; bad
 * options and bad input throw InputError, naming what is wrong, and write
 * nothing.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { createAdmin, InputError, listJobs, type BulkResult } from '../../src/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('admin_handle');
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.supervisors, jobvisor.queues');
});
after(async () => {
  await db.drop();
});

async function insert(status: string, extra = ''): Promise<string> {
  const r = await db.pool.query<{ id: string }>(
    `INSERT INTO jobvisor.jobs (kind, status, queue, last_error, finished_at) VALUES ('thumbnail', $1, 'default', $2, $3) RETURNING id${extra}`,
    [status, status === 'failed' ? 'Error: no such image' : null, status === 'failed' ? new Date() : null],
  );
  return r.rows[0]!.id;
}

/** A bulk action's counts. */
function counts(r: BulkResult): { matched: number; changed: number } {
  return { matched: r.matched, changed: r.changed };
}

/** Every job's id and status, and the paused queues: what a refused call must leave as it was. */
async function snapshot(): Promise<unknown> {
  const jobs = await db.pool.query('SELECT id, status, attempts, run_at FROM jobvisor.jobs ORDER BY id');
  const queues = await db.pool.query('SELECT queue, paused FROM jobvisor.queues ORDER BY queue');
  return { jobs: jobs.rows, queues: queues.rows };
}

describe('createAdmin', () => {
  it('reads through the pool it was given: list, count, get, stats, overview, dead letters, supervisors', async () => {
    const admin = createAdmin({ pool: db.pool });
    const failed = await insert('failed');
    const pending = await insert('pending');
    const page = await admin.listJobs({ status: 'failed' }, { limit: 10 });
    assert.deepEqual(
      page.jobs.map((j) => j.id),
      [failed],
    );
    // The same rows as the store-taking function (deprecated) gives.
    assert.deepEqual(page, await listJobs({ db: db.pool, schema: 'jobvisor' }, { status: 'failed' }, { limit: 10 }));
    assert.deepEqual(await admin.countJobs({}), { count: 2, capped: false });
    assert.equal((await admin.getJob(pending))?.status, 'pending');
    assert.equal(await admin.getJob('999999'), null);
    const stats = await admin.stats();
    assert.ok(
      stats.counts.some((r) => r.status === 'failed' && r.count === 1),
      JSON.stringify(stats),
    );
    assert.ok((await admin.overview()).queues.some((q) => q.queue === 'default'));
    assert.deepEqual(
      (await admin.deadLetterGroups()).map((g) => [g.kind, g.count]),
      [['thumbnail', 1]],
    );
    assert.deepEqual(await admin.listSupervisors(), []);
    assert.ok(Array.isArray(await admin.throughput('hour')));
    const [summary] = await admin.scheduleSummaries([
      {
        name: 'nightly',
        cron: '0 3 * * *',
        kind: 'daily_report',
        payload: {},
        queue: 'default',
        priority: 0,
        timezone: null,
      },
    ]);
    assert.equal(summary?.name, 'nightly');
    assert.deepEqual((await admin.relationsOf(pending)).parents.jobs, []);
    assert.ok((await admin.workflowOf(pending)).nodes.some((n) => n.id === pending));
  });

  it('changes jobs through the pool it was given: retry, run now, cancel, delete, pause and resume', async () => {
    const admin = createAdmin({ pool: db.pool });
    const failed = await insert('failed');
    const pending = await insert('pending');
    await db.pool.query(`UPDATE jobvisor.jobs SET run_at = now() + interval '1 hour' WHERE id = $1`, [pending]);
    assert.deepEqual(counts(await admin.retryJobs({ ids: [failed] })), { matched: 1, changed: 1 });
    assert.equal((await admin.getJob(failed))?.status, 'pending');
    assert.deepEqual(counts(await admin.runJobsNow({ ids: [pending] })), { matched: 1, changed: 1 });
    assert.deepEqual(counts(await admin.cancelJobs({ filter: { status: 'pending' } })), { matched: 2, changed: 2 });
    assert.deepEqual(counts(await admin.deleteJobs({ ids: [failed, pending] })), { matched: 2, changed: 2 });
    assert.deepEqual(await admin.countJobs({}), { count: 0, capped: false });
    await admin.pauseQueue('emails');
    assert.deepEqual(
      (await admin.listQueues()).filter((q) => q.paused).map((q) => q.queue),
      ['emails'],
    );
    await admin.resumeQueue('emails');
    assert.deepEqual(
      (await admin.listQueues()).filter((q) => q.paused),
      [],
    );
  });

  it('refuses bad options with InputError naming the option', () => {
    const cases: Array<[unknown, RegExp]> = [
      [undefined, /give it options/],
      [{}, /pool must be a pg Pool or Client, got undefined/],
      [{ pool: 'postgres://localhost/app' }, /pool must be a pg Pool or Client, got "postgres:\/\/localhost\/app"/],
      [{ pool: { connectionString: 'x' } }, /pool must be a pg Pool or Client, got an object without query\(\)/],
      [{ pool: db.pool, schema: 'Jobs; DROP TABLE x' }, /schema must be a lower-case SQL identifier/],
      [{ pool: db.pool, statementTimeoutMs: 0 }, /statementTimeoutMs must be a positive whole number/],
      [{ pool: db.pool, statementTimeoutMs: '5s' }, /statementTimeoutMs must be a positive whole number .*"5s"/],
    ];
    for (const [i, [options, message]] of cases.entries())
      assert.throws(
        () => createAdmin(options as Parameters<typeof createAdmin>[0]),
        (err: unknown) => err instanceof InputError && err.code === 'INPUT_INVALID' && message.test(err.message),
        `case ${i}`,
      );
  });

  it('refuses bad input to a method with InputError and writes nothing', async () => {
    const admin = createAdmin({ pool: db.pool });
    await insert('failed');
    await insert('pending');
    const before = await snapshot();
    await assert.rejects(admin.retryJobs({ ids: ['1', 'abc'] }), InputError);
    await assert.rejects(admin.cancelJobs({ filter: { status: 'finished' as never } }), InputError);
    await assert.rejects(admin.deleteJobs({ ids: ['-4'] }), InputError);
    await assert.rejects(admin.pauseQueue('no such queue!'), InputError);
    await assert.rejects(admin.getJob('1 OR 1=1'), InputError);
    assert.deepEqual(await snapshot(), before);
  });

  it("bounds each statement by statementTimeoutMs, and works in another schema's tables", async () => {
    // A statement waiting on a lock counts against its bound: the bounded handle gives up, the lock holder is untouched.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE jobvisor.jobs IN ACCESS EXCLUSIVE MODE');
      const bounded = createAdmin({ pool: db.pool, statementTimeoutMs: 300 });
      await assert.rejects(
        bounded.listJobs({}, { limit: 5 }),
        (err: Error & { code?: string }) => err.code === '57014',
      );
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    await migrate(db.pool, { schema: 'jv_other' });
    await db.pool.query(`INSERT INTO jv_other.jobs (kind, payload) VALUES ('elsewhere', '{}')`);
    const other = createAdmin({ pool: db.pool, schema: 'jv_other' });
    assert.deepEqual(
      (await other.listJobs({}, { limit: 5 })).jobs.map((j) => j.kind),
      ['elsewhere'],
    );
    assert.deepEqual((await createAdmin({ pool: db.pool }).listJobs({}, { limit: 5 })).jobs, []);
  });
});
