/**
 * Which server a connection reached and whether it takes writes: the signal a
 * supervisor uses to tell a primary from a standby (or a demoted primary) and
 * to notice that the endpoint now leads to another server (a failover).
 *
 * `pg_is_in_recovery()` is true on a standby and on an old primary restarted as
 * one; `transaction_read_only` is on there and on a primary set to
 * `default_transaction_read_only` (how some managed services stop writes).
 * The address is the server's end of the connection, so behind a Service or a
 * proxy it names the server actually reached (a pooler's own address when one
 * is in between).
 */
import type { Db } from './sql.ts';

const SERVER_ROLE = `/* jobvisor_server_role */
SELECT pg_is_in_recovery() AS in_recovery,
       current_setting('transaction_read_only') = 'on' AS read_only,
       coalesce(host(inet_server_addr()), 'local') || ':' || coalesce(inet_server_port()::text, '') AS address,
       current_setting('synchronous_standby_names') <> '' AS synchronous_standbys`;

export interface ServerRole {
  writable: boolean;
  inRecovery: boolean;
  /** host:port of the server reached, as the server sees it. */
  address: string;
  /** Commits wait for standbys (`synchronous_standby_names` is set). */
  synchronousStandbys: boolean;
}

/** Asks the server reached through `db`. Throws what the connection throws. */
export async function readServerRole(db: Db): Promise<ServerRole> {
  type Row = { in_recovery: boolean; read_only: boolean; address: string; synchronous_standbys: boolean };
  const { rows } = await db.query<Row>(SERVER_ROLE);
  const row = rows[0] as Row;
  return {
    writable: !row.in_recovery && !row.read_only,
    inRecovery: row.in_recovery,
    address: row.address,
    synchronousStandbys: row.synchronous_standbys,
  };
}
