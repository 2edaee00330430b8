/**
 * The store the completer writes through while the pool is open
 * (db/held.ts `untilPoolEnds`) keeps a transaction on one connection. A batch
 * call's outcomes are written in one transaction (complete/call_batch.ts); as
 * a bare query function that store sent BEGIN, each statement and COMMIT to
 * whichever connection the pool lent, and left a connection of the pool in an
 * open transaction that took in later statements (a batch call's start) and
 * held their row locks until some other COMMIT happened to land on it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { HeldConnection } from '../../src/db/held.ts';
import { inTransaction } from '../../src/queue/transaction.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let pool: pg.Pool;
let held: HeldConnection;

before(async () => {
  db = await createTestDatabase('held_transaction');
  await db.pool.query('CREATE TABLE marks (n int)');
  pool = new pg.Pool({ connectionString: db.url, max: 4 });
  held = new HeldConnection(pool);
  await held.take();
});

after(async () => {
  held.close();
  await pool.end();
  await db.drop();
});

const openTransactions = async () =>
  (
    await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
    )
  ).rows[0]?.n;

describe('a transaction through the held connection’s pool store', () => {
  it('runs every statement on one connection and leaves none of the pool in a transaction', async () => {
    const store = { db: held.untilPoolEnds, schema: 'jobvisor' };
    const pids = await inTransaction(store, async (tx) => {
      const answers = await Promise.all(
        [1, 2, 3].map(() => tx.db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')),
      );
      return answers.map((a) => a.rows[0]?.pid);
    });
    assert.equal(new Set(pids).size, 1, `one connection for the transaction, got pids ${pids.join(', ')}`);
    assert.equal(await openTransactions(), 0, 'no connection left idle in a transaction');
  });

  it('rolls back every statement of a failed transaction', async () => {
    const store = { db: held.untilPoolEnds, schema: 'jobvisor' };
    await assert.rejects(
      inTransaction(store, async (tx) => {
        await Promise.all([1, 2].map((n) => tx.db.query('INSERT INTO marks VALUES ($1)', [n])));
        throw new Error('refused');
      }),
      /refused/,
    );
    assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM marks')).rows[0].n, 0);
    assert.equal(await openTransactions(), 0);
  });
});
