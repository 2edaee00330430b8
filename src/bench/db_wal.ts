/**
 * WAL written for one database, not the whole server's: on a shared server
 * the difference of pg_current_wal_lsn() counts everybody's writes (it came
 * out negative per step beside other work). With pg_walinspect (PostgreSQL
 * 16+, a superuser to create it), the records between the two positions are
 * read back and only those of this database are summed: records touching one
 * of its blocks, and every record of a transaction that did (commits). Without
 * it, the server-wide difference, and `scope` says so.
 */
import type pg from 'pg';
import { messageOf } from '../errors.ts';

export interface DatabaseWal {
  bytes: number;
  scope: 'database' | 'server';
  /** Why the server's figure was taken, when it was. */
  note?: string;
}

// The flushed position: pg_walinspect refuses a range that ends past it, and every commit
// of the phase has been flushed by then (synchronous_commit on).
async function lsn(pool: pg.Pool): Promise<string> {
  return (await pool.query<{ l: string }>('SELECT pg_current_wal_flush_lsn()::text AS l')).rows[0]?.l as string;
}

export async function startDatabaseWal(pool: pg.Pool): Promise<{ stop(): Promise<DatabaseWal> }> {
  let inspect = true;
  try {
    await pool.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  } catch {
    inspect = false;
  }
  const from = await lsn(pool);
  return {
    async stop() {
      const to = await lsn(pool);
      let note = inspect ? undefined : 'pg_walinspect could not be created';
      if (inspect) {
        try {
          const { rows } = await pool.query<{ bytes: string }>(
            `WITH b AS (
               SELECT start_lsn, xid FROM pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false)
                WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()))
             SELECT coalesce(sum(r.record_length), 0)::text AS bytes
               FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) AS r
              WHERE r.start_lsn IN (SELECT start_lsn FROM b)
                 OR (r.xid <> '0' AND r.xid IN (SELECT xid FROM b WHERE xid <> '0'))`,
            [from, to],
          );
          return { bytes: Number(rows[0]?.bytes ?? 0), scope: 'database' };
        } catch (err) {
          // Not readable (WAL recycled, or no rights): fall back to the server's.
          note = messageOf(err);
        }
      }
      const { rows } = await pool.query<{ d: string }>('SELECT ($2::pg_lsn - $1::pg_lsn)::text AS d', [from, to]);
      return { bytes: Number(rows[0]?.d ?? 0), scope: 'server', note };
    },
  };
}
