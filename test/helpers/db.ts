/**
 * A fresh database per test file, cloned from the migrated template that
 * test/run.ts prepared. `drop()` fails the test if connections were left open
 * (a supervisor, pool or client not stopped), then drops the database.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';

export interface TestDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
  drop(): Promise<void>;
}

function server(): string {
  const url = process.env.JOBVISOR_TEST_DATABASE_URL;
  if (!url)
    throw new Error('JOBVISOR_TEST_DATABASE_URL is not set: run tests with `npm test` or `npx tsx test/run.ts FILE`');
  return url;
}

export function urlOf(database: string): string {
  const u = new URL(server());
  u.pathname = `/${database}`;
  return u.toString();
}

export async function adminQuery(sql: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: server() });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

/** The test file's name without `.test.ts` (or `.test.js`, its compiled copy: test/helpers/test_mirror.ts). */
const fileLabel = () => path.basename(process.argv[1] ?? 'test').replace(/\.test\.[jt]s$/, '');

export async function createTestDatabase(label = fileLabel()): Promise<TestDatabase> {
  const template = process.env.JOBVISOR_TEST_TEMPLATE;
  if (!template)
    throw new Error('JOBVISOR_TEST_TEMPLATE is not set: run tests with `npm test` or `npx tsx test/run.ts FILE`');
  return databaseFrom(label, `TEMPLATE ${template} ${process.env.JOBVISOR_TEST_TEMPLATE_COPY ?? ''}`);
}

/**
 * A fresh database that `jobvisor migrate` has not prepared (no jobvisor
 * schema), for the tests of what happens before migrating.
 */
export async function createEmptyDatabase(label = fileLabel(), max = 5): Promise<TestDatabase> {
  return databaseFrom(label, '', max);
}

/**
 * `drop()` waits for the pool's connections to leave pg_stat_activity before
 * DROP … WITH (FORCE): pool.end() resolves before the server has read each
 * connection's Terminate, and a backend terminated in that moment sends a
 * FATAL that pg-pool re-emits as the pool's 'error' after the test has ended.
 */
async function databaseFrom(label: string, clause: string, max = 5): Promise<TestDatabase> {
  const name = `t_${label
    .replace(/[^a-z0-9_]/gi, '_')
    .toLowerCase()
    .slice(0, 30)}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name} ${clause}`);
  const url = urlOf(name);
  const pool = new pg.Pool({ connectionString: url, max, application_name: 'test' });
  pool.on('error', () => {});
  return {
    name,
    url,
    pool,
    async drop() {
      await pool.end();
      const left = await adminQuery(
        `SELECT application_name, state, query FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [name],
      );
      // Connections closing right now need a moment to disappear from pg_stat_activity.
      let rows = left.rows;
      for (let i = 0; i < 50 && rows.length > 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        rows = (
          await adminQuery(`SELECT application_name, state, query FROM pg_stat_activity WHERE datname = $1`, [name])
        ).rows;
      }
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      if (rows.length > 0) throw new Error(`connections left open on ${name}: ${JSON.stringify(rows)}`);
    },
  };
}

/** A login role of its own on `db` (it has no rights until granted), with a pool connected as it. */
export interface LoginRole {
  name: string;
  pool: pg.Pool;
  /** Drops the role (end its pool first and drop the database, which holds its grants). */
  drop(): Promise<void>;
}

export async function createLoginRole(db: TestDatabase, prefix: string): Promise<LoginRole> {
  const name = `${prefix}_${randomBytes(3).toString('hex')}`;
  const password = randomBytes(9).toString('hex');
  await adminQuery(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`);
  const url = new URL(db.url);
  url.username = name;
  url.password = password;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  return {
    name,
    pool,
    async drop() {
      if (!pool.ended) await pool.end();
      await adminQuery(`DROP ROLE IF EXISTS ${name}`);
    },
  };
}
