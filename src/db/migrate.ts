/**
 * The migration runner: plain numbered `.sql` files from `migrations/`, applied in
 * order, each in its own transaction, under a transaction-level advisory lock so
 * replicas starting together are safe, and recorded in `<schema>.migrations` so a
 * migration never runs twice.
 *
 * The files name the schema `jobvisor`; another configured schema is substituted
 * for that identifier when they are applied.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { PACKAGE_ROOT } from '../config/index.ts';
import type { Logger } from '../log.ts';
import { qualify } from './schema.ts';

export const MIGRATIONS_DIR = path.join(PACKAGE_ROOT, 'migrations');
/** pg_advisory_xact_lock key: "jobvisor" as a number, shared by every replica. */
const LOCK_KEY = 0x6a6f6276;

interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.split('_')[0]),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(path.join(dir, file), 'utf8'),
    }));
}

/**
 * Applies every migration not yet recorded. Returns the names applied now.
 * @throws the database error of a failing migration (that migration is rolled back).
 */
export async function migrate(
  pool: pg.Pool,
  options: { schema?: string; log?: Logger; dir?: string } = {},
): Promise<string[]> {
  const schema = options.schema ?? 'jobvisor';
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(qualify(`CREATE SCHEMA IF NOT EXISTS jobvisor`, schema));
    await client.query(
      qualify(
        `CREATE TABLE IF NOT EXISTS jobvisor.migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
        schema,
      ),
    );
    const done = new Set(
      (await client.query<{ version: number }>(qualify('SELECT version FROM jobvisor.migrations', schema))).rows.map(
        (r) => r.version,
      ),
    );
    for (const m of listMigrations(options.dir)) {
      if (done.has(m.version)) continue;
      await client.query('SAVEPOINT migration');
      await client.query(qualify(m.sql, schema));
      await client.query(qualify('INSERT INTO jobvisor.migrations (version, name) VALUES ($1, $2)', schema), [
        m.version,
        m.name,
      ]);
      await client.query('RELEASE SAVEPOINT migration');
      applied.push(m.name);
      options.log?.info({ migration: m.name }, 'migration applied');
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** True when every migration in the folder is recorded: the readiness check. */
export async function isMigrated(db: pg.Pool, options: { schema?: string; dir?: string } = {}): Promise<boolean> {
  const schema = options.schema ?? 'jobvisor';
  // A missing table (42P01) means not migrated; any other error is the caller's.
  const res = await db
    .query<{ max: number | null }>(`SELECT max(version) AS max FROM ${quoteIdent(schema)}.migrations`)
    .catch((err: { code?: string }) => {
      if (err.code === '42P01' || err.code === '3F000') return { rows: [{ max: null }] };
      throw err;
    });
  const latest = Math.max(0, ...listMigrations(options.dir).map((m) => m.version));
  return (res.rows[0]?.max ?? -1) >= latest;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
