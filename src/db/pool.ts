/**
 * The supervisor's connection pool. Idle-client errors (a restarted server, a
 * terminated backend) are reported, never thrown: an unhandled 'error' event on
 * a pg Pool would take the process down.
 */
import pg from 'pg';
import type { Logger } from '../log.ts';

export type Db = pg.Pool | pg.PoolClient | pg.Client;

export function createPool(
  url: string,
  options: { max?: number; log?: Logger; applicationName?: string } = {},
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
  return pool;
}
