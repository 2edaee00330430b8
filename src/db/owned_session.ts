/**
 * Session settings only on a session that is ours.
 *
 * A session-level `SET` (or `set_config(…, false)`) stays on the server
 * connection that ran it. Directly connected, that connection is this client's
 * for its whole life. Behind a pooler in transaction mode it is not: the next
 * transaction on it may be an application's, which then runs under jobvisor's
 * statement_timeout. PgBouncer 1.18 refuses startup parameters it does not
 * track (`options`, `statement_timeout`: "unsupported startup parameter"), so
 * they cannot be sent at start-up either.
 *
 * How a session tells that it is ours: at start-up the server sends the client
 * its backend's process id (BackendKeyData, which cancel requests quote). A
 * pooler cannot give out the id of a server connection it shares, so it sends
 * one of its own (PgBouncer: a random number); the backend that runs the
 * statement then has another `pg_backend_pid()`. The test is part of the
 * statement that sets the value: no round trip is added. When the ids differ,
 * or the client got none, nothing is set; bounds that must hold through a
 * pooler are set per transaction (`SET LOCAL`) where jobvisor opens one.
 */
import type pg from 'pg';

/** The settings jobvisor gives a session of its own. */
export type SessionSetting =
  | 'application_name'
  | 'statement_timeout'
  | 'idle_in_transaction_session_timeout'
  /** PostgreSQL 14 and later. */
  | 'client_connection_check_interval';

/** The server version (`server_version_num`) each setting needs; older servers refuse its name. */
const SINCE: Partial<Record<SessionSetting, number>> = { client_connection_check_interval: 140000 };

/**
 * A select-list item that sets `name` for the session to parameter `$value`
 * when the backend is the one whose id is parameter `$pid` (see the file
 * comment) and the server knows the setting, else leaves it alone. Its
 * value: the new setting, or null.
 */
export function setIfOwnedSql(name: SessionSetting, value: number, pid: number): string {
  const since = SINCE[name];
  const server = since ? ` AND current_setting('server_version_num')::int >= ${since}` : '';
  return `CASE WHEN pg_backend_pid() = $${pid}::int${server} THEN set_config('${name}', $${value}, false) END`;
}

/** The backend process id the server (or a pooler) gave `client` at start-up; null when none came. */
export function startupPid(client: pg.ClientBase): number | null {
  const pid = (client as { processID?: unknown }).processID;
  return typeof pid === 'number' ? pid : null;
}
