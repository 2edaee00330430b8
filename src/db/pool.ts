/**
 * The supervisor's connection pool. Idle-client errors (a restarted server, a
 * terminated backend) are reported, never thrown: an unhandled 'error' event on
 * a pg Pool would take the process down.
 *
 * Every statement on the pool is bounded by a server-side `statement_timeout`
 * (default 30 s), so one slow statement cannot hold a connection that
 * heartbeats and claims need. A session that needs longer (migrations) sets
 * its own with `SET LOCAL`. The bound is set for the session only when the
 * session is this connection's own (owned_session.ts): behind a pooler in
 * transaction mode it would stay on a server connection that the next
 * transaction, perhaps an application's, then runs on; there nothing is set
 * and the pooler's own bound applies (README "PgBouncer and other poolers").
 *
 * A new connection is also asked whether its server takes writes
 * (`pg_is_in_recovery()`, `transaction_read_only`), in the same round trip. One
 * that does not (a standby, a demoted primary, the endpoint moved to a replica)
 * is refused with `ReadOnlyServerError` and closed, so the pool never keeps a
 * healthy-looking connection to a server where every write fails; a connection
 * whose statement failed as read-only is destroyed by pool.query (and by
 * `release(err)`), so the next one is opened afresh through the endpoint.
 */
import pg from 'pg';
import { ReadOnlyServerError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { setIfOwnedSql, startupPid } from './owned_session.ts';
import { timeoutText } from './statement_timeout.ts';

export type Db = pg.Pool | pg.PoolClient | pg.Client;

/** Default bound on any one statement of a supervisor's pool. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

/** Read on each new connection: a standby or a read-only server is refused (failover). */
const SERVER_ROLE = `pg_is_in_recovery() AS in_recovery, current_setting('transaction_read_only') AS read_only`;

/** pg-pool awaits `onConnect` before it hands a new connection out; @types/pg types it as returning void. */
interface PoolConfigWithHook extends Omit<pg.PoolConfig, 'onConnect'> {
  onConnect?: (client: pg.ClientBase) => Promise<void>;
}

export function createPool(
  url: string,
  options: {
    max?: number;
    log?: Logger;
    applicationName?: string;
    statementTimeoutMs?: number;
    /** Keep connections to a read-only server (read-only tools); default: refuse them. */
    allowReadOnly?: boolean;
  } = {},
): pg.Pool {
  const timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const config: PoolConfigWithHook = {
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'jobvisor',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    // Set with the server-role read, in its round trip, on a session of our own only
    // (owned_session.ts). pg-pool awaits onConnect before it hands the connection out,
    // so no query is ever queued behind it on the same client.
    onConnect: async (client) => {
      const { rows } = await client.query<{ in_recovery: boolean; read_only: string }>(
        timeoutMs > 0
          ? {
              text: `SELECT ${setIfOwnedSql('statement_timeout', 1, 2)}, ${SERVER_ROLE}`,
              values: [timeoutText(timeoutMs), startupPid(client)],
            }
          : { text: `SELECT ${SERVER_ROLE}` },
      );
      const row = rows[0];
      if (!options.allowReadOnly && row && (row.in_recovery || row.read_only === 'on'))
        throw new ReadOnlyServerError(
          row.in_recovery
            ? 'the database server is in recovery (a standby or a demoted primary): it takes no writes'
            : 'the database server is read-only (transaction_read_only is on): it takes no writes',
        );
    },
  };
  const pool = new pg.Pool(config);
  // A connection the pool is closing may still be terminated by the server before it
  // has read the Terminate (a restart, DROP DATABASE … WITH (FORCE)): nothing is lost.
  pool.on('error', (err) => {
    if (!pool.ending) options.log?.warn({ err }, 'idle database connection failed');
  });
  return pool;
}
