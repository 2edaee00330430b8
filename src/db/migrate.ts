/**
 * The migration runner: plain numbered `.sql` files from `migrations/`, applied in
 * order in one transaction (each under a savepoint), under a transaction-level
 * advisory lock so replicas starting together are safe, and recorded in
 * `<schema>.migrations` so a migration never runs twice. All the pending ones
 * commit together or not at all: the log says `applying migration` for each as
 * it runs, and `migrations applied` once they have committed.
 *
 * The files name the schema `jobvisor`; another configured schema is substituted
 * for that identifier when they are applied.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { JobvisorError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { PACKAGE_ROOT } from '../paths.ts';
import { borrow } from './borrow.ts';
import type { Db } from './pool.ts';
import { qualify } from './schema.ts';
import { setStatementTimeout } from './statement_timeout.ts';

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

export interface MigrateOptions {
  schema?: string;
  log?: Logger;
  dir?: string;
  /** Longest wait for one lock (DDL queues ahead of every enqueue and claim while it waits). Default 3 s. */
  lockTimeoutMs?: number;
  /** Longest run of one statement (0 = no limit). Default 15 min. */
  statementTimeoutMs?: number;
  /** Tries after a lock timeout before giving up. Default 10. */
  maxAttempts?: number;
  /** Aborting cancels the statement in progress (its place in the lock queue) and rolls back. */
  signal?: AbortSignal;
}

const DEFAULT_LOCK_TIMEOUT_MS = 3000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 15 * 60_000;
const DEFAULT_MAX_ATTEMPTS = 10;
const MAX_RETRY_DELAY_MS = 30_000;

/**
 * Applies every migration not yet recorded. Returns the names applied now.
 *
 * Every statement runs under `lock_timeout`: a migration that waits behind an
 * open application transaction gives up its place in the lock queue after that
 * long (so enqueues and claims queued behind it move again), rolls back, and is
 * tried again after a growing delay, with a log line per retry.
 * @throws the database error of a failing migration (that migration is rolled back),
 *   or a `MigrationAborted` error when `signal` aborts.
 */
export async function migrate(pool: pg.Pool, options: MigrateOptions = {}): Promise<string[]> {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(pool, options);
    } catch (err) {
      if (options.signal?.aborted) throw abortError(err);
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt >= maxAttempts) throw err;
      const delayMs = retryDelayMs(attempt);
      options.log?.warn(
        { attempt, maxAttempts, retryInMs: delayMs, lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS },
        'migration waited too long for a lock (an open transaction holds it); rolled back, retrying',
      );
      await sleep(delayMs, options.signal);
      if (options.signal?.aborted) throw abortError(err);
    }
  }
}

const LOCK_NOT_AVAILABLE = '55P03';

/** 1 s, 2 s, 4 s … capped at 30 s, ±20 %: the pure retry schedule. */
export function retryDelayMs(attempt: number, random = Math.random): number {
  const base = Math.min(MAX_RETRY_DELAY_MS, 1000 * 2 ** Math.min(attempt - 1, 10));
  return Math.round(base * (0.8 + random() * 0.4));
}

async function migrateOnce(pool: pg.Pool, options: MigrateOptions): Promise<string[]> {
  const schema = options.schema ?? 'jobvisor';
  const { client, release } = await borrow(pool);
  const stopOnAbort = cancelOnAbort(client, pool, options.signal);
  const applied: string[] = [];
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    await setStatementTimeout(client, options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS, 'transaction');
    // Waiting for another replica's migration holds no table lock: no lock timeout for it.
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await client.query(`SELECT set_config('lock_timeout', $1, true)`, [
      `${options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS}ms`,
    ]);
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
      options.signal?.throwIfAborted();
      options.log?.info({ migration: m.name }, 'applying migration');
      await client.query('SAVEPOINT migration');
      await client.query(qualify(m.sql, schema));
      await client.query(qualify('INSERT INTO jobvisor.migrations (version, name) VALUES ($1, $2)', schema), [
        m.version,
        m.name,
      ]);
      await client.query('RELEASE SAVEPOINT migration');
      applied.push(m.name);
    }
    await client.query('COMMIT');
    if (applied.length > 0) options.log?.info({ migrations: applied }, 'migrations applied');
    return applied;
  } catch (err) {
    if (options.signal?.aborted) broken = err as Error;
    else await client.query('ROLLBACK').catch((e: Error) => (broken = e));
    throw err;
  } finally {
    stopOnAbort();
    // A connection whose rollback failed (or was aborted) is closed, never reused.
    release(broken);
  }
}

/**
 * On abort: cancels the statement in progress from a second connection (a
 * backend waiting for a lock does not notice its client leaving), so its place
 * in the lock queue is freed now, not when the server next writes to it.
 */
function cancelOnAbort(client: pg.PoolClient, pool: pg.Pool, signal: AbortSignal | undefined): () => void {
  if (!signal) return () => {};
  const pid = (client as unknown as { processID?: number }).processID;
  const onAbort = () => {
    if (pid === undefined) return;
    pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => {});
  };
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

function abortError(cause: unknown): Error {
  return new JobvisorError('MIGRATION_ABORTED', 'migration aborted: rolled back, nothing applied by this run', {
    cause,
  });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** True when every migration in the folder is recorded: the readiness check. */
export async function isMigrated(db: Db, options: { schema?: string; dir?: string } = {}): Promise<boolean> {
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
