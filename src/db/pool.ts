/**
 * The supervisor's connection pool. Idle-client errors (a restarted server, a
 * terminated backend) are reported, never thrown: an unhandled 'error' event on
 * a pg Pool would take the process down.
 *
 * Every statement on the pool is bounded by a server-side `statement_timeout`
 * (default 30 s), so one slow statement cannot hold a connection that
 * heartbeats and claims need. A session that needs longer (migrations) sets
 * its own with `SET LOCAL`.
 */
import pg from 'pg';
import type { Logger } from '../log.ts';

export type Db = pg.Pool | pg.PoolClient | pg.Client;

/** Default bound on any one statement of a supervisor's pool. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

export function createPool(
  url: string,
  options: { max?: number; log?: Logger; applicationName?: string; statementTimeoutMs?: number } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'jobvisor',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
  });
  pool.on('error', (err) => options.log?.warn({ err }, 'idle database connection failed'));
  const timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  // A SET on each new connection rather than a startup parameter: PgBouncer refuses
  // startup parameters it does not know. pg runs it before the connection's first query.
  if (timeoutMs > 0) {
    pool.on('connect', (client) => {
      client.query(`SELECT set_config('statement_timeout', $1, false)`, [`${Math.floor(timeoutMs)}ms`]).catch(() => {});
    });
  }
  return pool;
}
