/**
 * src/db/borrow.ts on a real PostgreSQL: a borrowed client whose backend is
 * terminated while it sits idle in the borrower's hands reports the error to
 * the borrow (an unhandled 'error' event would end this test process), and is
 * closed on release, not lent again; a statement's own error keeps the
 * connection pooled.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { borrow, withClient, withConnection } from '../../src/db/borrow.ts';
import { isConnectionLost } from '../../src/errors.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let pool: pg.Pool;

before(async () => {
  db = await createTestDatabase('borrow');
  pool = new pg.Pool({ connectionString: db.url, max: 2, application_name: 'borrow-test' });
  pool.on('error', () => {});
});

after(async () => {
  await pool.end();
  await db.drop();
});

const backendPid = async (client: pg.ClientBase) =>
  Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);

describe('borrow', () => {
  it('keeps an error listener on a borrowed client whose backend is terminated, and closes it on release', async () => {
    const borrowed = await borrow(pool);
    const pid = await backendPid(borrowed.client);
    await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const lost = await until(
      'the borrowed connection reports its end',
      () => borrowed.lost,
      (err) => err !== undefined,
      5000,
      20,
    );
    assert.match(String(lost?.message), /terminat/i);
    borrowed.release();
    borrowed.release(); // a second release does nothing
    assert.equal(pool.totalCount, 0, 'the broken client left the pool');
    assert.notEqual(await withClient(pool, backendPid), pid, 'the next borrow gets a new connection');
  });

  it('withClient pools the client again after a statement error, and closes it after a connection error', async () => {
    const first = await withClient(pool, backendPid);
    await assert.rejects(
      withClient(pool, (client) => client.query('SELECT 1 / 0')),
      (err: Error & { code?: string }) => err.code === '22012',
    );
    assert.equal(await withClient(pool, backendPid), first, 'a division by zero leaves the connection usable');
    await assert.rejects(
      withClient(pool, async (client) => {
        await client.query('SELECT pg_terminate_backend(pg_backend_pid())');
      }),
      (err: Error) => isConnectionLost(err),
    );
    const after = await withClient(pool, backendPid);
    assert.notEqual(after, first, 'a terminated connection is not lent again');
    const kept = await withClient(pool, async (client, discard) => {
      discard(new Error('setting not restored'));
      return backendPid(client);
    });
    assert.equal(kept, after);
    assert.notEqual(await withClient(pool, backendPid), after, 'a discarded client is closed');
  });

  it('withConnection runs on a plain client as it is, without releasing it', async () => {
    const client = new pg.Client({ connectionString: db.url });
    client.on('error', () => {});
    await client.connect();
    try {
      const pid = await backendPid(client);
      assert.equal(await withConnection(client, backendPid), pid);
      assert.equal(await backendPid(client), pid, 'still connected');
    } finally {
      await client.end();
    }
  });

  it('tells a lost connection from a statement error', () => {
    const e = (code?: string) => Object.assign(new Error('x'), code === undefined ? {} : { code });
    for (const code of [undefined, 'ECONNRESET', 'EPIPE', '08006', '08003', '57P01', '57P02', '57P03'])
      assert.equal(isConnectionLost(e(code)), true, String(code));
    for (const code of ['22012', '23505', '57014', '40001', '40P01', '55P03', 'XX000'])
      assert.equal(isConnectionLost(e(code)), false, code);
  });
});
