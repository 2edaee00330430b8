/**
 * A database that refuses this process for good is not "unreachable", with a
 * real PostgreSQL: a wrong password (28P01), a missing database (3D000) and a
 * role without USAGE on jobvisor's schema (42501) make run() reject within
 * seconds naming the server's reason, and `jobvisor start` (one process or a
 * cluster) exit 1 with one line naming it; a password changed under a running
 * supervisor shows on /readyz with the reason. A refused port is still waited
 * for, /readyz saying "database unreachable", as before.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DatabaseAccessError, run } from '../../src/index.ts';
import { runCli } from '../helpers/cli.ts';
import { adminQuery, createLoginRole, createTestDatabase, type LoginRole, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';
import { BIN, writeConfig } from '../helpers/supervisor.ts';

let db: TestDatabase;
let role: LoginRole;
const quiet = { log: { level: 'silent' as const } };

/** `db.url` with another password, user or database. */
function urlWith(change: { password?: string; user?: string; database?: string }): string {
  const u = new URL(role.pool.options.connectionString as string);
  if (change.password !== undefined) u.password = change.password;
  if (change.user !== undefined) u.username = change.user;
  if (change.database !== undefined) u.pathname = `/${change.database}`;
  return u.toString();
}

/** Runs `fn`, which must reject with a DatabaseAccessError within 10 s; returns it and how long it took. */
async function refused(fn: () => Promise<unknown>): Promise<{ err: DatabaseAccessError; ms: number }> {
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('neither resolved nor rejected within 10 s')), 10_000);
  });
  const err = await Promise.race([fn(), late])
    .then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    )
    .finally(() => clearTimeout(timer));
  assert.ok(err instanceof DatabaseAccessError, `a DatabaseAccessError, got ${String(err)}`);
  return { err, ms: performance.now() - t0 };
}

/** A TCP port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

before(async () => {
  db = await createTestDatabase('access_refused');
  role = await createLoginRole(db, 'jv_refused');
  for (const grant of [
    `GRANT USAGE ON SCHEMA jobvisor TO ${role.name}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA jobvisor TO ${role.name}`,
    `GRANT USAGE ON ALL SEQUENCES IN SCHEMA jobvisor TO ${role.name}`,
  ])
    await db.pool.query(grant);
});

after(async () => {
  await role?.pool.end();
  await db?.drop();
  await role?.drop();
});

describe('run() on a database that refuses it for good', () => {
  it('rejects within seconds on a wrong password, naming 28P01 and the server’s reason', async (t) => {
    const { err, ms } = await refused(() =>
      run({ connectionString: urlWith({ password: 'not-the-password' }), tasks: {}, ...quiet }),
    );
    assert.equal(err.code, 'DB_ACCESS_REFUSED');
    assert.equal(err.sqlstate, '28P01');
    assert.match(
      err.message,
      /^database access refused: password authentication failed for user "jv_refused_\w+" \(SQLSTATE 28P01\)$/,
    );
    assert.doesNotMatch(err.message, /not-the-password/);
    t.diagnostic(`run() rejected after ${Math.round(ms)} ms`);
    assert.ok(ms < 5000, `rejected after ${Math.round(ms)} ms`);
  });

  it('rejects the same when it migrates first (migrate: true)', async () => {
    const { err } = await refused(() =>
      run({ connectionString: urlWith({ password: 'not-the-password' }), migrate: true, tasks: {}, ...quiet }),
    );
    assert.equal(err.sqlstate, '28P01');
    assert.ok((err.cause as { code?: string }).code === '28P01', 'the pg error is the cause');
  });

  it('rejects on a missing database (3D000), and with metrics served too', async () => {
    const { err } = await refused(() =>
      run({ connectionString: urlWith({ database: `${db.name}_typo` }), tasks: {}, metrics: { port: 0 }, ...quiet }),
    );
    assert.equal(err.sqlstate, '3D000');
    assert.match(err.message, new RegExp(`database "${db.name}_typo" does not exist \\(SQLSTATE 3D000\\)`));
  });

  it('rejects when the role may not use jobvisor’s schema (42501)', async () => {
    const bare = await createLoginRole(db, 'jv_bare');
    try {
      const { err } = await refused(() =>
        run({ connectionString: bare.pool.options.connectionString, tasks: {}, ...quiet }),
      );
      assert.equal(err.sqlstate, '42501');
      assert.match(err.message, /permission denied for schema jobvisor \(SQLSTATE 42501\)/);
    } finally {
      await bare.pool.end();
      await bare.drop();
    }
  });
});

describe('jobvisor start on a database that refuses it for good', () => {
  for (const processes of ['1', '2'])
    it(`exits 1 within seconds with one line naming 28P01 (--processes ${processes})`, async (t) => {
      const t0 = performance.now();
      const r = await runCli(urlWith({ password: 'not-the-password' }), ['start', '--processes', processes], {
        JOBVISOR_CONFIG: writeConfig({ metrics: { port: 0, host: '127.0.0.1' } }),
        LOG_LEVEL: 'error',
      });
      const ms = performance.now() - t0;
      assert.equal(r.code, 1, r.stderr);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(
        lines[0] as string,
        /^jobvisor: database access refused: password authentication failed for user "jv_refused_\w+" \(SQLSTATE 28P01\) \(DB_ACCESS_REFUSED\)$/,
      );
      assert.doesNotMatch(r.stdout + r.stderr, /not-the-password/);
      t.diagnostic(`jobvisor start exited after ${Math.round(ms)} ms (process start included)`);
      assert.ok(ms < 20_000, `exited after ${Math.round(ms)} ms`);
    });

  it('a cluster primary exits 1 naming 42501 for a role without USAGE on the schema', async () => {
    const bare = await createLoginRole(db, 'jv_bare');
    try {
      const r = await runCli(bare.pool.options.connectionString as string, ['start', '--processes', '2'], {
        JOBVISOR_CONFIG: writeConfig({ metrics: { port: 0, host: '127.0.0.1' } }),
        LOG_LEVEL: 'error',
      });
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr.trim(),
        /^jobvisor: database access refused: permission denied for schema jobvisor \(SQLSTATE 42501\) \(DB_ACCESS_REFUSED\)$/,
      );
    } finally {
      await bare.pool.end();
      await bare.drop();
    }
  });

  it('exits 1 naming 3D000 for a missing database', async () => {
    const r = await runCli(urlWith({ database: `${db.name}_typo` }), ['start'], {
      JOBVISOR_CONFIG: writeConfig({ metrics: { port: 0, host: '127.0.0.1' } }),
      LOG_LEVEL: 'error',
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr.trim(),
      /^jobvisor: database access refused: database "\w+" does not exist \(SQLSTATE 3D000\)/,
    );
  });
});

describe('transient failures and a running supervisor', () => {
  it('a refused port is waited for: /readyz says unreachable, and SIGTERM still ends the wait', async () => {
    const metricsPort = await closedPort();
    const child = spawn(process.execPath, [BIN, 'start'], {
      env: {
        ...process.env,
        DATABASE_URL: `postgres://app:pw@127.0.0.1:${await closedPort()}/app`,
        JOBVISOR_CONFIG: writeConfig({ metrics: { port: metricsPort, host: '127.0.0.1' } }),
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      // Several probes a second apart, all unreachable, and the process still waiting.
      let answers = 0;
      await until(
        '/readyz answering three times',
        async () => {
          const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
          if (!res) return answers;
          assert.equal(res.status, 503);
          assert.deepEqual(await res.json(), { status: 'not ready', reason: 'database unreachable' });
          return ++answers;
        },
        (n) => n >= 3,
        30_000,
        1100,
      );
      assert.equal(child.exitCode, null, out);
      assert.match(out, /waiting before starting to claim jobs/);
      child.kill('SIGTERM');
      assert.equal(await exited, 0, out);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a password changed under a running supervisor: /readyz gives the server’s reason, the process lives on', async () => {
    const runner = await run({
      connectionString: role.pool.options.connectionString,
      tasks: {},
      metrics: { port: 0, host: '127.0.0.1' },
      ...quiet,
    });
    try {
      const readyz = async () => {
        const res = await fetch(`http://127.0.0.1:${runner.metricsPort}/readyz`);
        return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
      };
      assert.equal((await readyz()).status, 200);
      await adminQuery(`ALTER ROLE ${role.name} PASSWORD 'rotated-elsewhere'`);
      // The probe's connection predates the change: ended, its next one meets the new password.
      await adminQuery(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'jobvisor-readiness' AND usename = $1",
        [role.name],
      );
      const answer = await until(
        '/readyz naming the refusal',
        readyz,
        (a) => a.status === 503 && /28P01/.test(a.body.reason ?? ''),
        15_000,
        200,
      );
      assert.match(
        answer.body.reason ?? '',
        /^database access refused: password authentication failed for user "jv_refused_\w+" \(SQLSTATE 28P01\)$/,
      );
    } finally {
      await runner.stop();
    }
  });
});
