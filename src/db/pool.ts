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

/** pg-pool awaits `onConnect` before it hands a new connection out; @types/pg types it as returning void. */
interface PoolConfigWithHook extends Omit<pg.PoolConfig, 'onConnect'> {
  onConnect?: (client: pg.ClientBase) => Promise<void>;
}

export function createPool(
  url: string,
  options: { max?: number; log?: Logger; applicationName?: string; statementTimeoutMs?: number } = {},
): pg.Pool {
  const timeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const config: PoolConfigWithHook = {
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'jobvisor',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    // A SET on each new connection rather than a startup parameter: PgBouncer refuses
    // startup parameters it does not know. pg-pool awaits onConnect before it hands the
    // connection out, so no query is ever queued behind it on the same client.
    onConnect:
      timeoutMs > 0
        ? async (client) => {
            await client.query(`SELECT set_config('statement_timeout', $1, false)`, [`${Math.floor(timeoutMs)}ms`]);
          }
        : undefined,
  };
  const pool = new pg.Pool(config);
  // A connection the pool is closing may still be terminated by the server before it
  // has read the Terminate (a restart, DROP DATABASE … WITH (FORCE)): nothing is lost.
  pool.on('error', (err) => {
    if (!pool.ending) options.log?.warn({ err }, 'idle database connection failed');
  });
  return pool;
}
