/**
 * A streaming standby of a chaos primary (postgres.ts), made the way operators
 * make one: `pg_basebackup -R` from the running primary (as the user the
 * servers run as), then started in hot standby. `promote()` on it is the
 * failover; `makeSynchronous` turns on synchronous replication to it.
 */
import path from 'node:path';
import { postgresBinDir, startChaosPostgres, type ChaosPostgres } from './postgres.ts';
import { until } from './measure.ts';

/** Starts a standby of `primary`, streaming as `name` (its application_name there). */
export async function startStandby(primary: ChaosPostgres, name = 'standby1'): Promise<ChaosPostgres> {
  const conninfo = `host=127.0.0.1 port=${primary.port} user=postgres password=${primary.password} application_name=${name}`;
  const standby = await startChaosPostgres({
    password: primary.password,
    settings: { hot_standby: 'on' },
    init: async (dataDir, exec) => {
      // -R writes standby.signal and primary_conninfo; -X stream copies the WAL of the backup too.
      await exec(path.join(postgresBinDir(), 'pg_basebackup'), [
        '-d',
        conninfo,
        '-D',
        dataDir,
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
      ]);
    },
  });
  await until(
    `standby ${name} streaming`,
    async () =>
      (await primary.query('SELECT state FROM pg_stat_replication WHERE application_name = $1', [name])).rows[0]
        ?.state as string | undefined,
    (state) => state === 'streaming',
    30_000,
    100,
  );
  return standby;
}

/** Commits on `primary` wait for standby `name` from now on (synchronous_standby_names). */
export async function makeSynchronous(primary: ChaosPostgres, name = 'standby1'): Promise<void> {
  await primary.query(`ALTER SYSTEM SET synchronous_standby_names = '${name}'`);
  await primary.query('SELECT pg_reload_conf()');
  await until(
    `standby ${name} synchronous`,
    async () =>
      (await primary.query('SELECT sync_state FROM pg_stat_replication WHERE application_name = $1', [name])).rows[0]
        ?.sync_state as string | undefined,
    (state) => state === 'sync',
    30_000,
    100,
  );
}

/** Resolves once every WAL byte the primary wrote has been replayed by the standby (no test race on reads). */
export async function caughtUp(primary: ChaosPostgres, standby: ChaosPostgres): Promise<void> {
  const lsn = (await primary.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn as string;
  await until(
    'standby caught up',
    async () =>
      (await standby.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn])).rows[0].ok as boolean,
    (ok) => ok,
    30_000,
    50,
  );
}
