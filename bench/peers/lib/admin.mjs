// A small pg pool of the runner's own, for what no peer library offers: counting
// finished jobs, ANALYZE after a preload, dropping the schemas a run created.
import pg from 'pg';

export function openAdmin(databaseUrl) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: 'peerbench-admin' });
  pool.on('error', () => {}); // an idle client dropped by the server is not our failure
  return {
    pool,
    async count(sql, params = []) {
      const { rows } = await pool.query(sql, params);
      return Number(rows[0].count);
    },
    async serverVersion() {
      const { rows } = await pool.query('SHOW server_version');
      return rows[0].server_version;
    },
    async analyzeSchema(schema) {
      const { rows } = await pool.query(
        `SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables WHERE schemaname = $1`,
        [schema],
      );
      for (const { name } of rows) await pool.query(`ANALYZE ${name}`);
    },
    async dropSchema(schema) {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
    close: () => pool.end(),
  };
}
