/**
 * The pool tasks get as `ctx.db`, one per thread and shared by its jobs.
 *
 * Bounded so that one task cannot hang its neighbours: a task that keeps every
 * connection checked out (a missing `client.release()`) makes the others wait
 * at most `TASK_DB_CONNECT_TIMEOUT_MS` for one, then fail with an error that
 * says why; a connection left idle inside an open transaction is closed by the
 * server after `TASK_DB_IDLE_IN_TRANSACTION_MS`, which frees its locks and its
 * slot. Statements themselves are not bounded: a task's own long query is its
 * business, and its job timeout stops it: a job that is aborted (timeout, lost
 * lease, shutdown) has the statements of the connections it holds cancelled
 * (run_connections.ts), so none runs on after its thread is gone.
 *
 * That timeout is set on each new connection with a statement, not sent as a
 * startup parameter: PgBouncer refuses startup parameters it does not know
 * ("unsupported startup parameter"), and every task's ctx.db failed through it.
 * It is set only on a session of the connection's own (db/owned_session.ts):
 * behind a pooler in transaction mode it would stay on a server connection
 * that an application's transactions run on next (PgBouncer's own
 * `idle_transaction_timeout` is the bound there; README "PgBouncer"). So is
 * `client_connection_check_interval` (PostgreSQL 14 and later), with which a
 * backend notices within a second that its client went away in the middle of
 * a statement (a thread terminated, a supervisor killed) and stops it.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { setIfOwnedSql, startupPid } from '../db/owned_session.ts';
import { currentJob } from './escapes.ts';
import { RunConnections, stoppedJobError } from './run_connections.ts';

// pg is loaded when a task first uses ctx.db, not when the thread boots: it is a
// third of a thread's start-up (about 30 ms), which every new thread and the
// first job of a new pod would otherwise wait for. A CommonJS require keeps
// ctx.db synchronous (and is what OpenTelemetry's pg instrumentation patches).
const requireModule = createRequire(import.meta.url);

export const TASK_DB_CONNECT_TIMEOUT_MS = 10_000;
export const TASK_DB_IDLE_IN_TRANSACTION_MS = 60_000;
/** How often a backend of ctx.db checks, during a statement, that its client is still there. */
export const TASK_DB_CLIENT_CHECK_MS = 1_000;

/** Which job holds which ctx.db connection, for the thread (one ctx.db pool per thread). */
const runs = new RunConnections();

/**
 * A job was stopped (its timeout, a lost lease, shutdown): the statements of the
 * ctx.db connections it holds are cancelled, those connections closed when
 * handed back, and it is lent no other. Safe before the pool exists.
 * @returns how many connections the job held.
 */
export function stopJobStatements(run: object): number {
  return runs.cancel(run);
}

type ConnectCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

export function createTaskPool(options: {
  connectionString: string;
  max: number;
  connectTimeoutMs?: number;
  idleInTransactionMs?: number;
}): pg.Pool {
  const connectTimeoutMs = options.connectTimeoutMs ?? TASK_DB_CONNECT_TIMEOUT_MS;
  const explain = (err: Error | undefined): Error | undefined => {
    if (!err || !/timeout exceeded when trying to connect/.test(err.message)) return err;
    return Object.assign(
      new Error(
        `ctx.db: no database connection within ${connectTimeoutMs} ms: all ${options.max} connections of this ` +
          'thread are in use (does a task keep a client without release()?) or the database is unreachable',
        { cause: err },
      ),
      { code: 'task_db_timeout' },
    );
  };
  const { Pool } = requireModule('pg') as typeof pg;
  class JobsPool extends Pool {
    // pg.Pool.query() goes through connect() too, so both report the clearer error, and
    // both lend the connection to the job in whose context it was asked for.
    override connect(): Promise<pg.PoolClient>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
      const run = currentJob.getStore();
      // The connection is the job's until released; a stopped job gets none (run_connections.ts).
      const lent = (client: pg.PoolClient): boolean => {
        if (!run || runs.lend(run, client)) return true;
        client.release();
        return false;
      };
      if (callback) {
        super.connect((err, client, done) => {
          if (!client) callback(explain(err), client, done);
          else if (!lent(client)) callback(stoppedJobError(), undefined, () => {});
          else callback(undefined, client, (e) => client.release(e as Error | undefined));
        });
        return;
      }
      return super.connect().then(
        (client) => {
          if (!lent(client)) throw stoppedJobError();
          return client;
        },
        (err: Error) => {
          throw explain(err) as Error;
        },
      );
    }
  }
  const idleMs = options.idleInTransactionMs ?? TASK_DB_IDLE_IN_TRANSACTION_MS;
  // pg-pool awaits onConnect before it hands a new connection out; @types/pg types it as returning void.
  const config = {
    connectionString: options.connectionString,
    max: options.max,
    application_name: 'jobvisor-task',
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: connectTimeoutMs,
    onConnect: async (client: pg.PoolClient) => {
      await client.query(
        `SELECT ${setIfOwnedSql('idle_in_transaction_session_timeout', 1, 3)}, ${setIfOwnedSql('client_connection_check_interval', 2, 3)}`,
        [`${Math.floor(idleMs)}ms`, `${TASK_DB_CLIENT_CHECK_MS}ms`, startupPid(client)],
      );
    },
  };
  return new JobsPool(config as unknown as pg.PoolConfig);
}
