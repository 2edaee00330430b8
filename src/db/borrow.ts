/**
 * Borrowing a client of a pg Pool: the only way jobvisor takes one.
 *
 * pg-pool keeps an error listener on its idle clients and takes it off while
 * a client is borrowed. A connection that ends during the borrow (a server
 * restart, a terminated backend) then emits 'error' with nobody listening,
 * and Node ends the process: `Unhandled 'error' event … Connection terminated
 * unexpectedly`. A borrow here keeps a listener of its own on the client from
 * `pool.connect()` to `release()`, and hands back a client whose connection
 * failed with that error, so the pool closes it instead of lending it again.
 * The operation in progress fails (its query rejects); the caller's loop
 * retries on a fresh connection.
 *
 * States: borrowed → released (once; a second release does nothing).
 * The lint rule jobvisor/no-pool-connect (scripts/eslint-pool-connect.js)
 * forbids `.connect()` on a pool anywhere else in src/.
 */
import type pg from 'pg';
import { isConnectionLost, isReadOnlyDbError } from '../errors.ts';
import type { Db } from './pool.ts';

export interface Borrowed {
  readonly client: pg.PoolClient;
  /** The error the connection emitted while borrowed, if any. */
  readonly lost: Error | undefined;
  /**
   * Hands the client back. Given an error (or when the connection emitted one),
   * the pool closes the client rather than lending it again.
   */
  release: (discard?: Error) => void;
}

/** Borrows a client of `pool`, listening for its connection's errors until it is released. */
export async function borrow(pool: pg.Pool): Promise<Borrowed> {
  const client = await pool.connect();
  let lost: Error | undefined;
  let released = false;
  const onError = (err: Error) => {
    lost ??= err;
  };
  client.on('error', onError);
  return {
    client,
    get lost() {
      return lost;
    },
    release: (discard) => {
      if (released) return;
      released = true;
      // pg-pool puts its own listener back inside release(), synchronously: no gap.
      client.removeListener('error', onError);
      client.release(lost ?? discard);
    },
  };
}

/**
 * Runs `fn` on a borrowed client and releases it, whatever `fn` does. A client
 * is closed, not pooled again, when its connection failed or `fn` threw a
 * connection error; `discard(err)` lets `fn` close it for a reason of its own
 * (a session setting it could not restore).
 */
export async function withClient<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient, discard: (err: Error) => void) => Promise<T>,
): Promise<T> {
  const borrowed = await borrow(pool);
  let broken: Error | undefined;
  try {
    return await fn(borrowed.client, (err) => (broken ??= err));
  } catch (err) {
    // A read-only server's connection is closed too, not lent again (failover: the endpoint moved).
    if (err instanceof Error && (isConnectionLost(err) || isReadOnlyDbError(err))) broken ??= err;
    throw err;
  } finally {
    borrowed.release(broken);
  }
}

/**
 * Runs `fn` on one connection: a client borrowed from `db` when it is a pool,
 * else `db` itself as it is (perhaps inside the caller's transaction).
 */
export function withConnection<T>(db: Db, fn: (client: pg.PoolClient | pg.Client) => Promise<T>): Promise<T> {
  return isPool(db) ? withClient(db, (client) => fn(client)) : fn(db);
}

export function isPool(db: Db): db is pg.Pool {
  return typeof (db as pg.Pool).totalCount === 'number';
}

/**
 * `pool` as a `Db` whose queries go through `query` (db/held.ts: the held
 * connection once the pool has ended) and which lends connections as the pool
 * does: borrow() and withConnection() take one client from it for a
 * transaction, with the error listener borrow() puts on every client it lends.
 */
export function poolWithQuery(pool: pg.Pool, query: (config: pg.QueryConfig) => Promise<pg.QueryResult>): Db {
  return {
    query,
    connect: () => pool.connect(),
    get totalCount() {
      return pool.totalCount;
    },
  } as unknown as Db;
}
