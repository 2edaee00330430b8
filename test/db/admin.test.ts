/**
 * The admin API against a real PostgreSQL: keyset pages, filters (with LIKE
 * wildcards taken literally), capped counts, job details, bulk actions by ids
 * and by filter in batches, dead-letter groups, throughput buckets, the
 * overview, supervisors' rows and schedules.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { rollUpFinished } from '../../src/queue/finished_rollup.ts';
import pg from 'pg';
import { InputError } from '../../src/errors.ts';
import {
  beatSupervisor,
  cancelJobs,
  countJobs,
  deadLetterGroups,
  deleteJobs,
  expireSupervisors,
  getJob,
  listJobs,
  listSupervisors,
  overview,
  retryJobs,
  runJobsNow,
  scheduleSummaries,
  stats,
  throughput,
  type JobFilter,
} from '../../src/queue/admin/index.ts';
import { pauseQueue } from '../../src/queue/pause.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let store: Store;
const warnings: string[] = [];
process.on('warning', (w) => warnings.push(w.message));

before(async () => {
  db = await createTestDatabase('admin');
  store = { db: db.pool, schema: 'jobvisor' };
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.supervisors, jobvisor.queues');
});
after(async () => {
  await db.drop();
});

/** Inserts rows by plain SQL; each object's keys are columns. Returns the ids in order. */
async function insert(rows: Array<Record<string, unknown>>): Promise<string[]> {
  const ids: string[] = [];
  for (const row of rows) {
    const cols = Object.keys(row);
    const values = Object.values(row).map((v) =>
      v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v,
    );
    const r = await db.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING id`,
      values,
    );
    ids.push(r.rows[0]!.id);
  }
  return ids;
}

async function many(n: number, sql: string): Promise<void> {
  await db.pool.query(`INSERT INTO jobvisor.jobs (kind, status, queue, finished_at, last_error) ${sql}`, [n]);
}

async function statuses(): Promise<Record<string, number>> {
  const r = await db.pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM jobvisor.jobs GROUP BY status',
  );
  return Object.fromEntries(r.rows.map((x) => [x.status, x.n]));
}

async function ids(filter: JobFilter): Promise<string[]> {
  return (await listJobs(store, filter, { limit: 1000 })).jobs.map((j) => j.id);
}

describe('listJobs', () => {
  it('walks keyset pages newest first with no duplicates or gaps, even while rows are added', async () => {
    await db.pool.query(`INSERT INTO jobvisor.jobs (kind) SELECT 'k' FROM generate_series(1, 25)`);
    const all = (await db.pool.query<{ id: string }>('SELECT id FROM jobvisor.jobs ORDER BY id DESC')).rows.map(
      (r) => r.id,
    );
    const seen: string[] = [];
    let after: string | null = null;
    const sizes: number[] = [];
    for (;;) {
      const page: Awaited<ReturnType<typeof listJobs>> = await listJobs(store, { kind: 'k' }, { limit: 10, after });
      sizes.push(page.jobs.length);
      seen.push(...page.jobs.map((j) => j.id));
      // A job added between pages is newer than every cursor: it cannot shift the pages.
      await db.pool.query(`INSERT INTO jobvisor.jobs (kind) VALUES ('k')`);
      if (page.next === null) break;
      after = page.next;
    }
    assert.deepEqual(sizes, [10, 10, 5]);
    assert.deepEqual(seen, all);
  });

  it('says there is no next page when the last page is exactly full', async () => {
    await db.pool.query(`INSERT INTO jobvisor.jobs (kind) SELECT 'k' FROM generate_series(1, 10)`);
    const first = await listJobs(store, {}, { limit: 5 });
    assert.ok(first.next);
    const second = await listJobs(store, {}, { limit: 5, after: first.next });
    assert.equal(second.jobs.length, 5);
    assert.equal(second.next, null);
  });

  it('filters by every field; % and _ in search text match literally', async () => {
    const [a, b, c, d, e] = await insert([
      { kind: 'mail', queue: 'q1', payload: { note: '100% sure' }, unique_key: 'u1' },
      { kind: 'mail', queue: 'q2', payload: { note: '1000 sure' } },
      { kind: 'thumb', queue: 'q1', payload: { note: 'a_b' }, status: 'failed', last_error: 'disk 50% full\nat x' },
      { kind: 'thumb', queue: 'q1', payload: { note: 'axb' }, status: 'failed', last_error: 'disk 500 full' },
      { kind: 'thumb', queue: 'q1', payload: { note: 'back\\slash' }, status: 'done' },
    ]);
    assert.deepEqual(await ids({ payloadText: '100%' }), [a]);
    assert.deepEqual(await ids({ payloadText: '100' }), [b, a]);
    assert.deepEqual(await ids({ payloadText: 'A_B' }), [c], 'case-insensitive, _ literal');
    assert.deepEqual(await ids({ payloadText: '\\\\' }), [e], 'a backslash is literal too (JSON escapes it)');
    assert.deepEqual(await ids({ errorText: '50%' }), [c]);
    assert.deepEqual(await ids({ errorText: 'DISK' }), [d, c]);
    assert.deepEqual(await ids({ errorPrefix: 'disk 50% full' }), [c]);
    assert.deepEqual(await ids({ status: 'failed' }), [d, c]);
    assert.deepEqual(await ids({ queue: 'q2' }), [b]);
    assert.deepEqual(await ids({ kind: 'thumb', status: 'failed', queue: 'q1' }), [d, c]);
    assert.deepEqual(await ids({ uniqueKey: 'u1' }), [a]);
    assert.deepEqual(await ids({ ids: [a!, e!, '999999'] }), [e, a]);
    assert.deepEqual(await ids({ payloadText: "'; DROP TABLE jobvisor.jobs; --" }), []);
    assert.equal((await statuses()).done, 1, 'the table is still there');
  });

  it('olderThan compares finished_at, or created_at while unfinished', async () => {
    const [oldDone, , oldPending] = await insert([
      { kind: 'k', status: 'done', finished_at: new Date(Date.now() - 8 * 86_400_000) },
      { kind: 'k', status: 'done', finished_at: new Date() },
      { kind: 'k', created_at: new Date(Date.now() - 8 * 86_400_000) },
      { kind: 'k' },
    ]);
    assert.deepEqual(await ids({ olderThan: 7 * 86_400_000 }), [oldPending, oldDone]);
  });

  it('refuses a bad id, cursor or status with an InputError before any query', async () => {
    await assert.rejects(listJobs(store, { ids: ['1', 'x'] }, { limit: 5 }), InputError);
    await assert.rejects(listJobs(store, {}, { limit: 5, after: '-3' }), InputError);
    await assert.rejects(listJobs(store, { status: 'lost' as never }, { limit: 5 }), InputError);
  });
});

describe('countJobs', () => {
  it('counts up to the cap and says when it stopped there', async () => {
    await db.pool.query(`INSERT INTO jobvisor.jobs (kind) SELECT 'k' FROM generate_series(1, 30)`);
    assert.deepEqual(await countJobs(store, {}, 10), { count: 10, capped: true });
    assert.deepEqual(await countJobs(store, {}, 30), { count: 30, capped: false });
    assert.deepEqual(await countJobs(store, { kind: 'k' }), { count: 30, capped: false });
    assert.deepEqual(await countJobs(store, { status: 'failed' }), { count: 0, capped: false });
    await db.pool.query(
      `UPDATE jobvisor.jobs SET status = 'failed' WHERE id IN (SELECT id FROM jobvisor.jobs LIMIT 4)`,
    );
    assert.deepEqual(await countJobs(store, { kind: 'k' }, 100, 'retry'), { count: 4, capped: false });
    assert.deepEqual(await countJobs(store, { kind: 'k' }, 100, 'cancel'), { count: 26, capped: false });
    assert.deepEqual(await countJobs(store, { status: 'failed' }, 100, 'cancel'), { count: 0, capped: false });
  });
});

describe('getJob', () => {
  it('returns every column and a timeline built from created, errors, start and finish', async () => {
    const [id] = await insert([
      {
        kind: 'thumb',
        payload: { image: 7 },
        status: 'failed',
        attempts: 2,
        max_attempts: 2,
        locked_by: 'host:1:abc',
        lease_token: 77,
        unique_key: 'img-7',
        trace_context: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
        created_at: new Date('2030-01-01T00:00:00Z'),
        started_at: new Date('2030-01-01T00:01:00Z'),
        finished_at: new Date('2030-01-01T00:01:05Z'),
        last_error: 'boom 2',
        errors: [
          { attempt: 1, at: '2030-01-01T00:00:10Z', error: 'boom 1' },
          { attempt: 2, at: '2030-01-01T00:01:05Z', error: 'boom 2' },
        ],
      },
    ]);
    const job = await getJob(store, id!);
    assert.ok(job);
    assert.deepEqual(job.payload, { image: 7 });
    assert.equal(job.locked_by, 'host:1:abc');
    assert.equal(job.lease_token, '77');
    assert.equal(job.unique_key, 'img-7');
    assert.equal(job.errors.length, 2);
    assert.deepEqual(
      job.timeline.map((e) => [e.event, e.attempt ?? null, e.error ?? null]),
      [
        ['created', null, null],
        ['failed', 1, 'boom 1'],
        ['started', 2, null],
        ['failed', 2, 'boom 2'],
        ['finished', null, 'boom 2'],
      ],
    );
    assert.equal(await getJob(store, '987654321'), null);
    await assert.rejects(getJob(store, 'abc'), InputError);
  });
});

describe('bulk actions', () => {
  it('retries 2,500 dead letters by filter in batches of 1,000 and reports counts', async () => {
    await many(2500, `SELECT 'dead', 'failed', 'default', now(), 'x' FROM generate_series(1, $1)`);
    await many(3, `SELECT 'dead', 'done', 'default', now(), NULL FROM generate_series(1, $1)`);
    const batches: number[] = [];
    const r = await retryJobs(store, { filter: { kind: 'dead' } }, { onBatch: (b) => batches.push(b.length) });
    assert.deepEqual(r, { matched: 2500, changed: 2500 });
    assert.deepEqual(batches, [1000, 1000, 500]);
    assert.deepEqual(await statuses(), { pending: 2500, done: 3 });
    const row = await db.pool.query(
      `SELECT max(attempts) AS a, bool_and(finished_at IS NULL) AS f FROM jobvisor.jobs WHERE status = 'pending'`,
    );
    assert.deepEqual(row.rows[0], { a: 0, f: true });
  });

  it('honours limit and batchSize', async () => {
    await many(50, `SELECT 'dead', 'failed', 'default', now(), 'x' FROM generate_series(1, $1)`);
    const batches: number[] = [];
    const r = await retryJobs(
      store,
      { filter: { status: 'failed' } },
      { limit: 25, batchSize: 10, onBatch: (b) => batches.push(b.length) },
    );
    assert.deepEqual(r, { matched: 25, changed: 25 });
    assert.deepEqual(batches, [10, 10, 5]);
  });

  it('retry by ids changes only failed and cancelled jobs', async () => {
    const [f, c, d, p] = await insert([
      { kind: 'k', status: 'failed' },
      { kind: 'k', status: 'cancelled' },
      { kind: 'k', status: 'done' },
      { kind: 'k' },
    ]);
    const r = await retryJobs(store, { ids: [f!, c!, d!, p!] });
    assert.deepEqual({ ...r, ids: r.ids?.sort() }, { matched: 2, changed: 2, ids: [f, c] });
  });

  it('a filter whose status the action does not apply to matches nothing', async () => {
    await insert([{ kind: 'k', status: 'done' }]);
    assert.deepEqual(await retryJobs(store, { filter: { status: 'done' } }), { matched: 0, changed: 0 });
  });

  it('cancel takes pending and running jobs (the running one keeps its lease until its run ends), never finished ones', async () => {
    const lease = new Date(Date.now() + 60_000);
    const [p, r, d] = await insert([
      { kind: 'k' },
      { kind: 'k', status: 'running', locked_by: 'A', locked_until: lease, lease_token: 5 },
      { kind: 'k', status: 'done' },
    ]);
    const res = await cancelJobs(store, { filter: { kind: 'k' } });
    assert.deepEqual(res, { matched: 2, changed: 2 });
    const rows = await db.pool.query(
      `SELECT id, status, locked_until, finished_at IS NOT NULL AS finished FROM jobvisor.jobs ORDER BY id`,
    );
    assert.deepEqual(
      rows.rows.map((x: { id: string; status: string; locked_until: Date | null; finished: boolean }) => [
        x.id,
        x.status,
        x.locked_until?.getTime() ?? null,
        x.finished,
      ]),
      [
        [p, 'cancelled', null, true],
        // Its task may still be stopping: the row holds its limit slot until then (cancelled_slot.ts).
        [r, 'cancelled', lease.getTime(), false],
        [d, 'done', null, false],
      ],
    );
  });

  it('run-now makes future pending jobs due and notifies their queue', async () => {
    const future = new Date(Date.now() + 3_600_000);
    const [later, due] = await insert([
      { kind: 'k', queue: 'slow', run_at: future },
      { kind: 'k', queue: 'fast' },
    ]);
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(n.payload ?? ''));
      await listener.query('LISTEN jobvisor_jobs');
      const r = await runJobsNow(store, { ids: [later!, due!] });
      assert.deepEqual(r, { matched: 2, changed: 1, ids: [later] });
      const row = await db.pool.query<{ due: boolean }>(
        `SELECT run_at <= now() AS due FROM jobvisor.jobs WHERE id = $1`,
        [later],
      );
      assert.equal(row.rows[0]?.due, true);
      await until(
        'the queue notified',
        () => heard,
        (h) => h.includes('slow'),
      );
      assert.ok(!heard.includes('fast'));
    } finally {
      await listener.end();
    }
  });

  it('delete never removes a running job, by ids or by filter', async () => {
    const [r, d, p] = await insert([
      { kind: 'k', status: 'running', locked_by: 'A', locked_until: new Date(Date.now() + 60_000) },
      { kind: 'k', status: 'done' },
      { kind: 'k' },
    ]);
    assert.deepEqual(await deleteJobs(store, { ids: [r!, d!] }), { matched: 1, changed: 1, ids: [d] });
    assert.deepEqual(await deleteJobs(store, { filter: {} }), { matched: 1, changed: 1 });
    const left = await db.pool.query<{ id: string }>('SELECT id FROM jobvisor.jobs');
    assert.deepEqual(
      left.rows.map((x) => x.id),
      [r],
    );
    assert.ok(p);
  });

  it('a batch that loses a deadlock is written again', async () => {
    const [a, b] = await insert([{ kind: 'k' }, { kind: 'k' }]);
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      // Only the cancel's backend checks for the deadlock (a check runs deadlock_timeout
      // after a backend starts waiting; whichever runs it first is aborted).
      await other.query("SET LOCAL deadlock_timeout = '60s'");
      await other.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1 FOR UPDATE', [b]);
      // The bulk cancel locks a, then waits for b; the other transaction then wants a.
      const cancel = cancelJobs(store, { ids: [a!, b!] });
      await until(
        'the cancel waits for b',
        async () =>
          (
            await db.pool.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%admin_cancel%'`,
            )
          ).rows[0].n as number,
        (n) => n === 1,
      );
      // The cancel's deadlock check aborts it; the other transaction gets a, commits,
      // and the cancel's second try takes both.
      await other.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1 FOR UPDATE', [a]);
      await other.query('COMMIT');
      const r = await cancel;
      assert.deepEqual({ ...r, ids: r.ids?.sort() }, { matched: 2, changed: 2, ids: [a, b] });
    } finally {
      await other.end();
    }
  });

  it('delete of old dead letters of one kind', async () => {
    const old = new Date(Date.now() - 10 * 86_400_000);
    const [keep1, gone, keep2] = await insert([
      { kind: 'a', status: 'failed', finished_at: new Date() },
      { kind: 'a', status: 'failed', finished_at: old },
      { kind: 'b', status: 'failed', finished_at: old },
    ]);
    const r = await deleteJobs(store, { filter: { status: 'failed', kind: 'a', olderThan: 7 * 86_400_000 } });
    assert.deepEqual(r, { matched: 1, changed: 1 });
    const left = (await db.pool.query<{ id: string }>('SELECT id FROM jobvisor.jobs ORDER BY id')).rows.map(
      (x) => x.id,
    );
    assert.deepEqual(left, [keep1, keep2]);
    assert.ok(gone);
  });
});

describe('dead letters', () => {
  it('groups by kind and the first line of the error; a group can be retried', async () => {
    const t1 = new Date('2030-01-01T00:00:00Z');
    const t2 = new Date('2030-01-02T00:00:00Z');
    await insert([
      { kind: 'thumb', status: 'failed', last_error: 'ENOSPC: no space\n    at write (a.js:1)', finished_at: t1 },
      { kind: 'thumb', status: 'failed', last_error: 'ENOSPC: no space\n    at other (b.js:2)', finished_at: t2 },
      { kind: 'thumb', status: 'failed', last_error: 'bad image', finished_at: t1 },
      { kind: 'mail', status: 'failed', last_error: 'ENOSPC: no space', finished_at: t1 },
      { kind: 'mail', status: 'done', last_error: 'ENOSPC: no space', finished_at: t1 },
    ]);
    const groups = await deadLetterGroups(store);
    assert.deepEqual(
      groups.map((g) => [g.kind, g.errorPrefix, g.count]),
      [
        ['thumb', 'ENOSPC: no space', 2],
        ['mail', 'ENOSPC: no space', 1],
        ['thumb', 'bad image', 1],
      ],
    );
    assert.deepEqual([groups[0]?.firstSeen, groups[0]?.lastSeen], [t1, t2]);
    const r = await retryJobs(store, { filter: { status: 'failed', kind: 'thumb', errorPrefix: 'ENOSPC: no space' } });
    assert.deepEqual(r, { matched: 2, changed: 2 });
    assert.equal((await deadLetterGroups(store, { limit: 1 })).length, 1);
  });
});

describe('throughput and overview', () => {
  it('buckets done and dead-lettered jobs by minute over the hour and by 15 minutes over the day', async () => {
    const now = new Date('2030-01-01T12:00:30Z');
    const ago = (ms: number) => new Date(now.getTime() - ms);
    await insert([
      { kind: 'k', status: 'done', finished_at: ago(10_000) },
      { kind: 'k', status: 'done', finished_at: ago(20_000) },
      { kind: 'k', status: 'failed', finished_at: ago(90_000) },
      { kind: 'k', status: 'done', finished_at: ago(2 * 3_600_000) },
      { kind: 'k', status: 'cancelled', finished_at: ago(10_000) },
      { kind: 'k', status: 'done', finished_at: ago(2 * 86_400_000) },
    ]);
    const hour = await throughput(store, 'hour', now);
    assert.equal(hour.length, 60);
    assert.deepEqual(hour.at(-1), { bucketStart: new Date('2030-01-01T12:00:00Z'), done: 2, failed: 0 });
    assert.deepEqual(hour.at(-2), { bucketStart: new Date('2030-01-01T11:59:00Z'), done: 0, failed: 1 });
    assert.equal(
      hour.reduce((n, b) => n + b.done + b.failed, 0),
      3,
    );
    const day = await throughput(store, 'day', now);
    assert.equal(day.length, 96);
    assert.deepEqual(day.at(-1), { bucketStart: new Date('2030-01-01T12:00:00Z'), done: 2, failed: 0 });
    assert.equal(
      day.reduce((n, b) => n + b.done + b.failed, 0),
      4,
    );
  });

  it('counts pending, due, running, dead and done in the last hour per queue, and the oldest due age', async () => {
    const now = new Date('2030-01-01T12:00:00Z');
    const ago = (ms: number) => new Date(now.getTime() - ms);
    await insert([
      { kind: 'k', queue: 'a', run_at: ago(30_000) },
      { kind: 'k', queue: 'a', run_at: ago(-60_000) },
      { kind: 'k', queue: 'a', status: 'running' },
      { kind: 'k', queue: 'a', status: 'done', finished_at: ago(60_000) },
      { kind: 'k', queue: 'a', status: 'done', finished_at: ago(7_200_000) },
      { kind: 'k', queue: 'b', status: 'failed', finished_at: ago(60_000) },
      { kind: 'k', queue: 'b', run_at: ago(5_000) },
      { kind: 'k', queue: 'b', run_at: ago(-5_000), priority: -1 },
    ]);
    await beatSupervisor(
      store,
      { id: 'h:1:a', host: 'h', pid: 1, version: '1.0.0', queues: { a: 5 }, inFlight: 1, leaseMs: 15_000 },
      ago(1000),
    );
    const o = await overview(store, now);
    assert.deepEqual(o.queues, [
      { queue: 'a', pending: 2, due: 1, running: 1, dead: 0, doneLastHour: 1, blocked: 0, paused: false },
      { queue: 'b', pending: 2, due: 1, running: 0, dead: 1, doneLastHour: 0, blocked: 0, paused: false },
    ]);
    assert.equal(o.oldestDueAgeSeconds, 30);
    assert.equal(o.capped, false);
    const capped = await overview(store, now, { cap: 2 });
    assert.equal(capped.capped, true, 'three pending rows read with a cap of 2');
    assert.ok(capped.queues.reduce((n, q) => n + q.pending, 0) <= 3);
    // The oldest due pending job may sit behind a higher priority one in the index.
    await insert([{ kind: 'k', queue: 'b', run_at: ago(90_000), priority: 7 }]);
    assert.equal((await overview(store, now)).oldestDueAgeSeconds, 90);
    await db.pool.query(`UPDATE jobvisor.jobs SET run_at = '-infinity' WHERE priority = 7`);
    assert.equal((await overview(store, now)).oldestDueAgeSeconds, now.getTime() / 1000, 'due since 1970');
    assert.deepEqual(
      o.supervisors.map((s) => [s.id, s.queues, s.in_flight]),
      [['h:1:a', { a: 5 }, 1]],
    );
    // Paused queues are marked, and one paused before it held a job is listed too.
    await pauseQueue(db.pool, 'b');
    await pauseQueue(db.pool, 'aa');
    assert.deepEqual(
      (await overview(store, now)).queues.map((q) => [q.queue, q.pending, q.paused]),
      [
        ['a', 2, false],
        ['aa', 0, true],
        ['b', 3, true],
      ],
    );
    // A paused queue's jobs wait on purpose: the oldest due age is the other queues'.
    assert.equal((await overview(store, now)).oldestDueAgeSeconds, 30, 'b is paused: a is left');
    await pauseQueue(db.pool, 'a');
    assert.equal((await overview(store, now)).oldestDueAgeSeconds, null, 'every queue with due jobs is paused');
  });
});

describe('supervisors', () => {
  it('a beat inserts then refreshes the row; rows past expiry are hidden, then deleted', async () => {
    const t = new Date('2030-01-01T00:00:00Z');
    const info = {
      id: 's1',
      host: 'h',
      pid: 10,
      version: '9.9.9',
      queues: { default: 10 },
      inFlight: 0,
      leaseMs: 1000,
    };
    await beatSupervisor(store, info, t);
    await beatSupervisor(store, { ...info, inFlight: 4 }, new Date(t.getTime() + 2000));
    let rows = await listSupervisors(store, new Date(t.getTime() + 2500));
    assert.equal(rows.length, 1);
    assert.deepEqual(
      [rows[0]?.started_at, rows[0]?.heartbeat_at, rows[0]?.in_flight],
      [t, new Date(t.getTime() + 2000), 4],
    );
    // Expires 3 leases after the last beat.
    rows = await listSupervisors(store, new Date(t.getTime() + 5001));
    assert.equal(rows.length, 0);
    assert.deepEqual(await expireSupervisors(store, new Date(t.getTime() + 4000)), []);
    assert.deepEqual(await expireSupervisors(store, new Date(t.getTime() + 5001)), ['s1']);
  });

  it('stats counts done and cancelled jobs of the last hour, or every row kept with all', async () => {
    const hourAgo = (m: number) => new Date(Date.now() - m * 60_000);
    await insert([
      { kind: 'hist', status: 'done', finished_at: hourAgo(5) },
      { kind: 'hist', status: 'done', finished_at: hourAgo(50) },
      { kind: 'hist', status: 'done', finished_at: hourAgo(70) },
      { kind: 'hist', status: 'cancelled', finished_at: hourAgo(1) },
      { kind: 'hist', status: 'cancelled', finished_at: hourAgo(600) },
      { kind: 'hist', status: 'failed', finished_at: hourAgo(600) },
    ]);
    const of = (s: Awaited<ReturnType<typeof stats>>) =>
      s.counts.filter((c) => c.kind === 'hist').map((c) => [c.status, c.count]);
    const recent = await stats(store);
    assert.equal(recent.finishedWithin, '1 hour');
    assert.deepEqual(of(recent), [
      ['cancelled', 1],
      ['done', 2],
      ['failed', 1],
    ]);
    // The same once the minutes are rolled up (counted in finished_minutes, not in jobs).
    await db.pool.query(`UPDATE jobvisor.finished_rollup SET upto = now() - interval '1 day'`);
    while (!(await rollUpFinished(store))?.caughtUp);
    assert.deepEqual(of(await stats(store)), of(recent));
    const all = await stats(store, null, { all: true });
    assert.equal(all.finishedWithin, 'all');
    assert.deepEqual(of(all), [
      ['cancelled', 2],
      ['done', 3],
      ['failed', 1],
    ]);
    await db.pool.query("DELETE FROM jobvisor.jobs WHERE kind = 'hist'");
    await db.pool.query("DELETE FROM jobvisor.finished_minutes WHERE kind = 'hist'");
  });

  it('stats lists counts and the live supervisors', async () => {
    await insert([{ kind: 'k' }, { kind: 'k', status: 'failed' }]);
    await beatSupervisor(store, {
      id: 's2',
      host: 'h',
      pid: 2,
      version: '1',
      queues: { default: 3 },
      inFlight: 0,
      leaseMs: 15_000,
    });
    const s = await stats(store);
    assert.deepEqual(
      s.counts.map((c) => [c.status, c.count]),
      [
        ['failed', 1],
        ['pending', 1],
      ],
    );
    assert.deepEqual(
      s.supervisors.map((x) => x.id),
      ['s2'],
    );
  });
});

describe('on one client', () => {
  it('issues its statements one at a time (pg 8 deprecates queueing on a busy client)', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const one: Store = { db: client, schema: 'jobvisor' };
      const base = { kind: 'k', payload: {}, queue: 'default', priority: 0, timezone: null };
      await overview(one);
      await stats(one);
      await scheduleSummaries(one, [
        { ...base, name: 'a', cron: '0 * * * *' },
        { ...base, name: 'b', cron: '0 3 * * *' },
      ]);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(
        warnings.filter((w) => /already executing a query/.test(w)),
        [],
      );
    } finally {
      await client.end();
    }
  });
});

describe('schedules', () => {
  it('next fire times and the last fire’s job', async () => {
    const now = new Date('2030-01-01T12:00:00Z');
    const [, last] = await insert([
      {
        kind: 'daily_report',
        unique_key: 'schedule:nightly:2029-12-30T03:00:00.000Z',
        run_at: new Date('2029-12-30T03:00:00Z'),
      },
      {
        kind: 'daily_report',
        unique_key: 'schedule:nightly:2029-12-31T03:00:00.000Z',
        run_at: new Date('2029-12-31T03:00:00Z'),
      },
      {
        kind: 'daily_report',
        unique_key: 'schedule:nightly2:2030-01-01T03:00:00.000Z',
        run_at: new Date('2030-01-01T03:00:00Z'),
      },
    ]);
    const base = { kind: 'daily_report', payload: {}, queue: 'default', priority: 0, timezone: null };
    const [nightly, hourly] = await scheduleSummaries(
      store,
      [
        { ...base, name: 'nightly', cron: '0 3 * * *' },
        { ...base, name: 'hourly', cron: '0 * * * *' },
      ],
      now,
      2,
    );
    assert.deepEqual(nightly?.next, [new Date('2030-01-02T03:00:00Z'), new Date('2030-01-03T03:00:00Z')]);
    assert.equal(nightly?.lastJob?.id, last);
    assert.deepEqual(hourly?.next, [new Date('2030-01-01T13:00:00Z'), new Date('2030-01-01T14:00:00Z')]);
    assert.equal(hourly?.lastJob, null);
  });
});
