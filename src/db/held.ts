/**
 * One connection of a pool held out of it for one loop (the heartbeat), so
 * that loop never needs a new connection while it has one: when another
 * application takes every slot of `max_connections`, the supervisor keeps its
 * leases through the connection it already holds. Taken at start, while slots
 * are free; out of the pool's `max`, so the budget does not grow.
 *
 * States: none → held → (lost: handed back with its error, so the pool closes
 * it) → none … → closed. With no connection held (not yet taken, lost, or none
 * to be had) a query goes through the pool as any other. Queries on the held
 * connection take turns (pg deprecates queueing them on one client).
 *
 * It is also the last connection a supervisor has when the pool's owner (an
 * app that gave run() its own pool) ends the pool under it: `untilPoolEnds`
 * sends through the pool while it is open and through the held connection once
 * it is ending, so the drain's outcomes and hand-backs are still written; the
 * pool's end() resolves when close() hands the connection back.
 */
import type pg from 'pg';
import { isReadOnlyDbError, isRetryableDbError } from '../errors.ts';
import { borrow, poolWithQuery, type Borrowed } from './borrow.ts';
import { setIfOwnedSql, startupPid } from './owned_session.ts';
import type { Db } from './pool.ts';

export class HeldConnection {
  private held: Borrowed | undefined;
  private taking: Promise<pg.PoolClient | undefined> | undefined;
  private closed = false;
  /** The tail of the queries sent on the held connection. */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly pool: pg.Pool) {}

  /** For `Store.db`: the statement modules use only `query(config)`. */
  get db(): Db {
    return { query: (config: pg.QueryConfig) => this.query(config) } as unknown as Db;
  }

  /**
   * For `Store.db` of the statements a drain still writes (outcomes, hand-backs):
   * the pool while it is open, the held connection once its owner has ended it.
   */
  get untilPoolEnds(): Db {
    const pool = this.pool;
    // A pool to borrow.ts (poolWithQuery): a transaction (a batch call's outcomes) borrows
    // one connection for all its statements. As a bare query function, its BEGIN and COMMIT
    // went to two connections of the pool and left a transaction open on a lent one, which
    // took in whatever statement the pool gave that connection next. Once the pool has
    // ended, borrowing fails and the writes go one by one through the held connection.
    return poolWithQuery(pool, (config) => (pool.ending ? this.query(config) : pool.query(config)));
  }

  /** Takes a connection now. Never throws: without one, queries use the pool. */
  async take(): Promise<void> {
    await this.get();
  }

  async query(config: pg.QueryConfig): Promise<pg.QueryResult> {
    const client = await this.get();
    if (!client) return this.pool.query(config);
    const mine = this.turn.then(() => client.query(config));
    this.turn = mine.catch(() => undefined);
    try {
      return await mine;
    } catch (err) {
      // A statement's own error leaves the connection usable; a lost or read-only one does not.
      if (isRetryableDbError(err) || isReadOnlyDbError(err)) this.lose(client, err);
      throw err;
    }
  }

  /** Hands the connection back to the pool. Idempotent. */
  close(): void {
    this.closed = true;
    const held = this.held;
    this.held = undefined;
    // Closed, not handed back under its heartbeat name.
    held?.release(new Error('heartbeat connection closed'));
  }

  private get(): Promise<pg.PoolClient | undefined> {
    if (this.held || this.closed) return Promise.resolve(this.held?.client);
    this.taking ??= borrow(this.pool)
      .then(
        async (held) => {
          const { client } = held;
          client.on('error', (err) => this.lose(client, err));
          if (this.closed) {
            held.release();
            return undefined;
          }
          // Named in pg_stat_activity, so an operator (or a test) can tell it from the pool's;
          // on a session of its own only (owned_session.ts: not a pooler's shared one).
          await client
            .query(`SELECT ${setIfOwnedSql('application_name', 1, 2)}`, ['jobvisor-heartbeat', startupPid(client)])
            .catch(() => {});
          this.held = held;
          return client;
        },
        () => undefined,
      )
      .finally(() => (this.taking = undefined));
    return this.taking;
  }

  private lose(client: pg.PoolClient, err: unknown): void {
    const held = this.held;
    if (held?.client !== client) return;
    this.held = undefined;
    held.release(err instanceof Error ? err : new Error(String(err)));
  }
}
