/**
 * statement_timeout, set one way everywhere: the server-side bound on every
 * statement of a connection (pool, readiness probe, dashboard request) or of
 * one transaction (migrations).
 */
import type pg from 'pg';

type Scope = 'session' | 'transaction';

/**
 * A select-list item that sets statement_timeout to the value of parameter
 * `$param`, so a caller can set it in the same round trip as another read.
 */
export function setStatementTimeoutSql(param: number, scope: Scope = 'session'): string {
  return `set_config('statement_timeout', $${param}, ${scope === 'transaction'})`;
}

/** statement_timeout's text for `ms` milliseconds (whole milliseconds; 0: no bound). */
export function timeoutText(ms: number): string {
  return `${Math.floor(ms)}ms`;
}

/** Sets statement_timeout on `client`: `value` in milliseconds, or a setting's text as the server gave it. */
export async function setStatementTimeout(
  client: Pick<pg.ClientBase, 'query'>,
  value: number | string,
  scope: Scope = 'session',
): Promise<void> {
  await client.query(`SELECT ${setStatementTimeoutSql(1, scope)}`, [
    typeof value === 'number' ? timeoutText(value) : value,
  ]);
}
