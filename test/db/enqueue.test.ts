import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { InputError } from '../../src/errors.ts';
import { enqueue, enqueueMany, validateJob } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
const jobCount = async () => (await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.jobs')).rows[0].n as number;

before(async () => {
  db = await createTestDatabase('enqueue');
});
after(async () => {
  await db.drop();
});

describe('enqueue', () => {
  it("commits or rolls back with the caller's transaction", async () => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const { id } = await enqueue(client, 'welcome_email', { user_id: 1 });
      assert.ok(id);
      await client.query('ROLLBACK');
      assert.equal(
        (await db.pool.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1', [id])).rowCount,
        0,
        'rollback leaves no job',
      );
      await client.query('BEGIN');
      const kept = await enqueue(client, 'welcome_email', { user_id: 2 });
      await client.query('COMMIT');
      assert.equal((await db.pool.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1', [kept.id])).rowCount, 1);
    } finally {
      client.release();
    }
  });

  it('notifies listeners on commit, once per statement, also for plain SQL inserts and re-queues', async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const seen: string[] = [];
    let wake: () => void = () => {};
    listener.on('notification', (n) => {
      seen.push(n.channel);
      wake();
    });
    await listener.query('LISTEN jobvisor_jobs');
    const next = () =>
      new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no notification within 2 s')), 2000);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    try {
      let got = next();
      await db.pool.query("INSERT INTO jobvisor.jobs (kind, payload) VALUES ('welcome_email', '{\"user_id\":1}')");
      await got;
      got = next();
      await enqueueMany(
        db.pool,
        Array.from({ length: 500 }, (_, i) => ({ kind: 'record', payload: { i } })),
      );
      await got;
      await new Promise((r) => setTimeout(r, 100)); // let any extra notifications arrive before counting
      assert.equal(seen.length, 2, 'one notification per statement, not per row');
      const { rows } = await db.pool.query(
        "UPDATE jobvisor.jobs SET status = 'failed' WHERE id = (SELECT min(id) FROM jobvisor.jobs) RETURNING id",
      );
      got = next();
      await db.pool.query("UPDATE jobvisor.jobs SET status = 'pending', attempts = 0 WHERE id = $1", [rows[0].id]);
      await got;
    } finally {
      await listener.end();
    }
  });

  it('fills defaults for a plain SQL insert', async () => {
    const { rows } = await db.pool.query(
      "INSERT INTO jobvisor.jobs (kind, payload) VALUES ('welcome_email', '{\"user_id\":1}') RETURNING *",
    );
    const r = rows[0];
    assert.equal(r.status, 'pending');
    assert.equal(r.queue, 'default');
    assert.equal(r.attempts, 0);
    assert.equal(r.max_attempts, 8);
    assert.equal(r.priority, 0);
    assert.deepEqual(r.errors, []);
    assert.ok(r.run_at instanceof Date && r.created_at instanceof Date);
  });

  it('applies options: queue, priority, delay, runAt, maxAttempts', async () => {
    const a = await enqueue(db.pool, 'x', { a: 1 }, { queue: 'emails', priority: -5, delay: '10m', maxAttempts: 3 });
    const runAt = new Date('2030-01-02T03:04:05Z');
    const b = await enqueue(db.pool, 'x', null, { runAt });
    const rows = (
      await db.pool.query(
        'SELECT id, queue, priority, max_attempts, run_at, payload FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
        [[a.id, b.id]],
      )
    ).rows;
    assert.equal(rows[0].queue, 'emails');
    assert.equal(rows[0].priority, -5);
    assert.equal(rows[0].max_attempts, 3);
    const delay = rows[0].run_at.getTime() - Date.now();
    assert.ok(delay > 9 * 60_000 && delay <= 10 * 60_000 + 1000, `delay ${delay}`);
    assert.equal(rows[1].run_at.toISOString(), runAt.toISOString());
    assert.equal(rows[1].payload, null);
  });

  it('skips a duplicate unique key and reports the existing job', async () => {
    const first = await enqueue(db.pool, 'report', { day: 'x' }, { uniqueKey: 'day-1' });
    const again = await enqueue(db.pool, 'report', { day: 'y' }, { uniqueKey: 'day-1' });
    assert.equal(first.duplicate, false);
    assert.deepEqual(again, { id: first.id, duplicate: true });
    const otherKind = await enqueue(db.pool, 'other', {}, { uniqueKey: 'day-1' });
    assert.equal(otherKind.duplicate, false, 'unique per kind');
    const batch = await enqueueMany(db.pool, [
      { kind: 'report', uniqueKey: 'day-1' },
      { kind: 'report', uniqueKey: 'day-2' },
      { kind: 'report', uniqueKey: 'day-2' },
      { kind: 'report' },
    ]);
    assert.deepEqual(
      batch.map((r) => r.duplicate),
      [true, false, true, false],
    );
    assert.equal(batch[0]?.id, first.id);
    assert.equal(batch[2]?.id, batch[1]?.id);
  });

  it('inserts a batch in one statement and returns ids in order', async () => {
    const results = await enqueueMany(
      db.pool,
      Array.from({ length: 1000 }, (_, i) => ({ kind: 'record', payload: { i } })),
    );
    assert.equal(results.length, 1000);
    const rows = (
      await db.pool.query('SELECT id, payload FROM jobvisor.jobs WHERE id = ANY($1)', [results.map((r) => r.id)])
    ).rows;
    const byId = new Map(rows.map((r) => [r.id, r.payload.i]));
    results.forEach((r, i) => assert.equal(byId.get(r.id), i));
  });

  it('rejects bad input before writing anything', async () => {
    const before = await jobCount();
    const bad: Array<[string, unknown, Record<string, unknown>]> = [
      ['', {}, {}],
      ['../../etc/passwd', {}, {}],
      ["x'; DROP TABLE jobvisor.jobs; --", {}, {}],
      ['k'.repeat(201), {}, {}],
      ['ok', { s: 'nul\u0000byte' }, {}],
      ['ok', { s: '\ud800' }, {}],
      ['ok', { n: Number.NaN }, {}],
      ['ok', { big: 'x'.repeat(2 * 1024 * 1024) }, {}],
      ['ok', JSON.parse('['.repeat(200) + ']'.repeat(200)), {}],
      ['ok', {}, { priority: 1.5 }],
      ['ok', {}, { priority: 10_000_000 }],
      ['ok', {}, { maxAttempts: 0 }],
      ['ok', {}, { maxAttempts: -1 }],
      ['ok', {}, { delay: 'soon' }],
      ['ok', {}, { delay: '-5s' }],
      ['ok', {}, { runAt: 'tomorrow' }],
      ['ok', {}, { runAt: new Date('invalid') }],
      ['ok', {}, { runAt: new Date(), delay: '1s' }],
      ['ok', {}, { queue: 'bad queue' }],
      ['ok', {}, { uniqueKey: '' }],
      ['ok', {}, { uniqueKey: 'a\u0000b' }],
      ['ok', () => 1, {}],
      ['ok', 10n, {}],
    ];
    for (const [kind, payload, options] of bad) {
      await assert.rejects(
        enqueue(db.pool, kind, payload as never, options),
        InputError,
        `${kind} ${JSON.stringify(options)}`,
      );
    }
    await assert.rejects(
      enqueueMany(db.pool, [{ kind: 'ok' }, { kind: 'ok', payload: { s: '\u0000' } }]),
      (err: Error) => err instanceof InputError && /jobs\[1\]\.payload/.test(err.message),
    );
    assert.equal(await jobCount(), before, 'nothing was written');
  });

  it('refuses what JSON would silently change, naming where it is, and names a cycle as one', async () => {
    const before = await jobCount();
    class Money {
      constructor(readonly cents: number) {}
    }
    const cyclic: Record<string, unknown> = { name: 'a', user: { friends: [] as unknown[] } };
    (cyclic.user as { friends: unknown[] }).friends.push(cyclic.user);
    const cases: Array<[unknown, RegExp]> = [
      [{ user: { tags: new Set(['a']) } }, /^payload\.user\.tags is a Set, which JSON stores as \{\}/],
      [{ user: { prefs: new Map([['a', 1]]) } }, /^payload\.user\.prefs is a Map, which JSON stores as \{\}/],
      [{ order: { total: new Money(5) } }, /^payload\.order\.total is an instance of Money without toJSON\(\)/],
      [{ hooks: [{ 'on-done': () => 1 }] }, /^payload\.hooks\[0\]\["on-done"\] is a function, which is not JSON/],
      [cyclic, /^payload\.user\.friends\[0\] refers back to payload\.user: a cycle, which JSON cannot represent$/],
      [{ big: { n: 10n } }, /^payload\.big\.n is a bigint/],
      [{ list: [1, undefined] }, /^payload\.list\[1\] is undefined, which is not JSON/],
      [{ deep: { s: 'a\u0000b' } }, /^payload\.deep\.s contains a NUL character/],
    ];
    for (const [payload, message] of cases) {
      await assert.rejects(enqueue(db.pool, 'ok', payload as never), (err: Error) => {
        assert.ok(err instanceof InputError, err.message);
        assert.match(err.message, message);
        return true;
      });
      assert.throws(
        () => validateJob('ok', payload),
        (err: Error) => err instanceof InputError && message.test(err.message),
      );
      await assert.rejects(
        enqueueMany(db.pool, [{ kind: 'ok' }, { kind: 'ok', payload: payload }]),
        (err: Error) => err instanceof InputError && err.message.startsWith('jobs[1].payload'),
      );
    }
    // Inside the caller's transaction: refused before any statement, so the transaction goes on.
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await assert.rejects(enqueue(client, 'ok', { s: new Set() }), InputError);
      await client.query('SELECT 1');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    // What JSON writes as it is still passes: dates, objects without prototype, boxed text, undefined fields.
    const fine = Object.assign(Object.create(null) as object, { at: new Date(0), s: new String('x'), skip: undefined });
    assert.equal(typeof validateJob('ok', fine), 'undefined');
    assert.equal(await jobCount(), before, 'nothing was written');
  });

  it('stores hostile text as data', async () => {
    const payload = { sql: "'); DROP TABLE jobvisor.jobs; --", emoji: '👋', quote: '"\\' };
    const { id } = await enqueue(db.pool, 'ok', payload, { uniqueKey: "' OR 1=1 --" });
    const row = (await db.pool.query('SELECT payload, unique_key FROM jobvisor.jobs WHERE id = $1', [id])).rows[0];
    assert.deepEqual(row.payload, payload);
    assert.equal(row.unique_key, "' OR 1=1 --");
  });
});
