/** A throw-away database per benchmark run, on the configured (or embedded) server. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';

export interface BenchDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
  drop(): Promise<void>;
}

export async function createBenchDatabase(
  serverUrl: string,
  label: string,
  options: { migrate?: boolean } = {},
): Promise<BenchDatabase> {
  const name = `bench_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`;
  await admin(serverUrl, `CREATE DATABASE ${name}`);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  // Filling and vacuuming millions of rows takes longer than a supervisor's statement bound.
  const pool = createPool(url, { max: 8, applicationName: 'jobvisor-bench', statementTimeoutMs: 0 });
  if (options.migrate !== false) await migrate(pool);
  return {
    name,
    url,
    pool,
    async drop() {
      await pool.end().catch(() => {});
      await admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function admin(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
