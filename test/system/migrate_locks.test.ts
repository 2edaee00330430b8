/**
 * Migrations behind an open application transaction (issue 15, item 5): the
 * migration's lock request must not queue every enqueue and claim behind it for
 * longer than about its lock timeout; it retries until the transaction ends;
 * and SIGTERM / abort frees its place in the lock queue at once, also when
 * the migration is `jobvisor start --migrate`'s (which then exits 0, as after
 * any drain; before, the signal met Node's default handler: exit 143).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { MIGRATIONS_DIR, migrate, retryDelayMs } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { claimJobs } from '../../src/queue/claim.ts';
import { enqueue } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { BIN } from '../helpers/supervisor.ts';

let db: TestDatabase;
let dir: string;

before(async () => {
  db = await createTestDatabase('migrate_locks');
  // The real migrations (already applied in the template) plus one that needs
  // ACCESS EXCLUSIVE on the jobs table, as most ALTER TABLEs do.
  dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-migrations-'));
  for (const f of readdirSync(MIGRATIONS_DIR)) copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
  writeFileSync(path.join(dir, '900_lock_probe.sql'), 'ALTER TABLE jobvisor.jobs ADD COLUMN lock_probe integer;\n');
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db.drop();
});

async function openHolder(lockSql: string): Promise<pg.Client> {
  const holder = new pg.Client({ connectionString: db.url, application_name: 'test-holder' });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query(lockSql);
  return holder;
}

async function waitingLocks(): Promise<number> {
  const r = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid)
      WHERE NOT l.granted AND a.datname = current_database() AND a.application_name <> 'test-holder'`,
  );
  return r.rows[0]!.n;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A logger at `level` whose warn and info lines are also kept in `lines`. */
function capturedLog(level: 'info' | 'warn') {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ level, fd: 2 });
  for (const method of ['warn', 'info'] as const) {
    const write = log[method].bind(log);
    log[method] = ((obj: Record<string, unknown>, msg: string) => {
      lines.push({ ...obj, msg });
      write(obj, msg);
    }) as typeof log.warn;
  }
  return { log, lines };
}

describe('migrations and open transactions', () => {
  it('says a migration applied only once it has committed: a later one failing rolls back every one, and says so', async () => {
    const failing = mkdtempSync(path.join(tmpdir(), 'jobvisor-migrations-'));
    try {
      for (const f of readdirSync(MIGRATIONS_DIR)) copyFileSync(path.join(MIGRATIONS_DIR, f), path.join(failing, f));
      writeFileSync(path.join(failing, '900_log_probe.sql'), 'CREATE TABLE jobvisor.log_probe (id int);\n');
      writeFileSync(path.join(failing, '901_broken.sql'), 'SELECT 1 / 0;\n');
      const first = capturedLog('info');
      await assert.rejects(migrate(db.pool, { dir: failing, log: first.log }), { code: '22012' });
      const messages = first.lines.map((l) => [l.msg, l.migration].join(' '));
      assert.deepEqual(messages, ['applying migration 900_log_probe', 'applying migration 901_broken']);
      const probe = await db.pool.query("SELECT to_regclass('jobvisor.log_probe') AS t");
      assert.equal(probe.rows[0].t, null, '900 was rolled back with 901');

      rmSync(path.join(failing, '901_broken.sql'));
      const second = capturedLog('info');
      assert.deepEqual(await migrate(db.pool, { dir: failing, log: second.log }), ['900_log_probe']);
      assert.deepEqual(second.lines.at(-1), { migrations: ['900_log_probe'], msg: 'migrations applied' });
    } finally {
      rmSync(failing, { recursive: true, force: true });
      await db.pool.query('DROP TABLE IF EXISTS jobvisor.log_probe');
      await db.pool.query('DELETE FROM jobvisor.migrations WHERE version = 900');
    }
  });

  it('retry delays grow, are jittered and capped', () => {
    assert.equal(
      retryDelayMs(1, () => 0.5),
      1000,
    );
    assert.equal(
      retryDelayMs(3, () => 0.5),
      4000,
    );
    assert.equal(
      retryDelayMs(20, () => 0.5),
      30_000,
    );
    assert.equal(
      retryDelayMs(1, () => 0),
      800,
    );
    assert.equal(
      retryDelayMs(1, () => 1),
      1200,
    );
  });

  it('enqueue and claim wait at most about the lock timeout; migrate succeeds once the transaction ends', async () => {
    const holder = await openHolder('SELECT count(*) FROM jobvisor.jobs'); // ACCESS SHARE, held open
    const { log, lines } = capturedLog('warn');
    const lockTimeoutMs = 300;
    const migrating = migrate(db.pool, { dir, lockTimeoutMs, log });
    let settled = false;
    void migrating.finally(() => (settled = true)).catch(() => {});

    // The transaction stays open 4 s whatever happens here; meanwhile, keep enqueuing and claiming.
    let settledWhileHeld = true;
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        settledWhileHeld = settled;
        void holder
          .query('COMMIT')
          .then(() => holder.end())
          .then(resolve);
      }, 4000),
    );
    let open = true;
    void released.then(() => (open = false));
    const store = { db: db.pool, schema: 'jobvisor' };
    let worst = 0;
    let ops = 0;
    while (open) {
      const t0 = Date.now();
      await enqueue(db.pool, 'lock_probe', { i: ops }, { queue: 'locks' });
      await claimJobs(store, { owner: 'test', queue: 'locks', limit: 1, leaseMs: 60_000 });
      worst = Math.max(worst, Date.now() - t0);
      ops++;
    }
    await released;
    assert.equal(settledWhileHeld, false, 'migrate was still waiting while the transaction was open');
    assert.deepEqual(await migrating, ['900_lock_probe']);
    assert.ok(
      lines.some((l) => /retrying/.test(String(l.msg))),
      'a log line per retry',
    );
    // The lock timeout bounds the wait (plus scheduling slack on a shared machine).
    assert.ok(worst < lockTimeoutMs + 1500, `an enqueue+claim waited ${worst} ms behind the migration`);
    process.stdout.write(
      `# ${ops} enqueue+claim rounds while blocked; worst ${worst} ms; lock timeout ${lockTimeoutMs} ms\n`,
    );
    await db.pool.query('ALTER TABLE jobvisor.jobs DROP COLUMN lock_probe');
    await db.pool.query('DELETE FROM jobvisor.migrations WHERE version = 900');
  });

  it('abort cancels the waiting statement at once and frees the lock queue', async () => {
    const holder = await openHolder('SELECT count(*) FROM jobvisor.jobs');
    const abort = new AbortController();
    const migrating = migrate(db.pool, { dir, lockTimeoutMs: 60_000, signal: abort.signal });
    migrating.catch(() => {});
    await until(async () => (await waitingLocks()) > 0, 5000, 'the migration to queue for its lock');
    abort.abort();
    await assert.rejects(migrating, { code: 'MIGRATION_ABORTED' });
    assert.equal(await waitingLocks(), 0, 'nothing waits in the lock queue after abort');
    // Enqueues go through while the application transaction is still open.
    await enqueue(db.pool, 'lock_probe', {}, { queue: 'locks' });
    await holder.query('ROLLBACK');
    await holder.end();
    const cols = await db.pool.query(
      `SELECT 1 FROM pg_attribute WHERE attrelid = 'jobvisor.jobs'::regclass AND attname = 'lock_probe'`,
    );
    assert.equal(cols.rowCount, 0, 'the aborted migration was rolled back');
  });

  /**
   * Runs `jobvisor ...args` until it queues for the migrations' lock behind an open
   * transaction, sends SIGTERM, and returns its exit code and output once the lock queue is
   * empty again; then checks that nothing was recorded and that migrate() applies it after.
   */
  async function signalWhileMigrating(args: string[], env: Record<string, string>) {
    // Forget 002 (idempotent storage settings: SHARE UPDATE EXCLUSIVE on jobs) so the CLI re-applies it.
    await db.pool.query('DELETE FROM jobvisor.migrations WHERE version = 2');
    const holder = await openHolder('LOCK TABLE jobvisor.jobs IN SHARE UPDATE EXCLUSIVE MODE');
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DATABASE_URL: db.url, NODE_ENV: 'test', ...env },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let code: number | null;
    try {
      await until(async () => (await waitingLocks()) > 0, 15_000, `jobvisor ${args[0]} to queue for its lock`);
      child.kill('SIGTERM');
      code = await exited;
      // The backend is cancelled, not left waiting until the server next writes to a closed socket.
      await until(async () => (await waitingLocks()) === 0, 1000, 'the lock queue to empty after SIGTERM');
    } finally {
      child.kill('SIGKILL');
      await holder.query('ROLLBACK');
      await holder.end();
    }
    const r = await db.pool.query('SELECT 1 FROM jobvisor.migrations WHERE version = 2');
    assert.equal(r.rowCount, 0, 'nothing recorded by the interrupted run');
    assert.deepEqual(await migrate(db.pool), ['002_storage']);
    return { code, output };
  }

  it('SIGTERM to `jobvisor migrate` frees the lock queue', async () => {
    const { code, output } = await signalWhileMigrating(['migrate'], { LOG_LEVEL: 'warn' });
    assert.equal(code, 1, output);
  });

  it('SIGTERM to `jobvisor start --migrate` while it migrates: the lock queue is freed and it exits 0', async () => {
    const { code, output } = await signalWhileMigrating(['start', '--migrate'], {
      METRICS_PORT: '0',
      JOBVISOR_CONFIG: '',
    });
    assert.equal(code, 0, output);
    assert.match(output, /"msg":"draining"/);
    assert.doesNotMatch(output, /"msg":"ready"/);
  });
});
