/**
 * Operations under floods and database incidents (issue 15, items 3, 6, 10):
 * /readyz answers from a cached probe on its own connection, so a flood of
 * requests neither queues behind nor delays heartbeats; /metrics answers within
 * its deadline while the database is silent; a loop failing for longer than a
 * lease turns readiness to 503 naming it; label sets stay bounded.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { createPool } from '../../src/db/pool.ts';
import { DatabaseProbe } from '../../src/metrics/readiness.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startProxy } from '../helpers/chaos/proxy.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
let tasksDir: string;
const PG = new URL(process.env.JOBVISOR_TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432');

before(async () => {
  db = await createTestDatabase('ops_probes');
  tasksDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-ops-tasks-'));
  writeFileSync(
    path.join(tasksDir, 'ops_sleep.mjs'),
    `export default (payload, ctx) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, payload.ms);
  ctx.signal.addEventListener('abort', () => { clearTimeout(t); reject(ctx.signal.reason); }, { once: true });
});\n`,
  );
});
after(async () => {
  rmSync(tasksDir, { recursive: true, force: true });
  await db.drop();
});

/**
 * A TCP proxy that delays every chunk in both directions by `ms` (database latency).
 * It runs in its own process, so the flood this test sends does not delay it.
 */
const LATENCY_PROXY = `
const net = require('node:net');
const [host, port, ms] = process.argv.slice(1);
const server = net.createServer((client) => {
  const upstream = net.connect(Number(port), host);
  for (const s of [client, upstream]) {
    s.on('error', () => {});
    s.on('close', () => { client.destroy(); upstream.destroy(); });
  }
  client.on('data', (c) => setTimeout(() => upstream.write(c), Number(ms)));
  upstream.on('data', (c) => setTimeout(() => client.write(c), Number(ms)));
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

async function latencyProxy(ms: number): Promise<{ url: string; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', LATENCY_PROXY, PG.hostname, PG.port, String(ms)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (c: Buffer) => resolve(Number(c.toString().trim())));
    child.once('exit', (code) => reject(new Error(`latency proxy exited ${code}`)));
  });
  const url = new URL(db.url);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    close: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

function get(port: number, urlPath: string, timeoutMs = 10_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`GET ${urlPath}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

async function until<T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('statement bounds', () => {
  it('every connection of a supervisor pool runs under statement_timeout (30 s unless told)', async () => {
    const pool = createPool(db.url, { max: 2 });
    const short = createPool(db.url, { max: 1, statementTimeoutMs: 200 });
    try {
      const shown = await Promise.all(
        [0, 1].map(() => pool.query<{ t: string }>("SELECT current_setting('statement_timeout') AS t")),
      );
      assert.deepEqual(
        shown.map((r) => r.rows[0]!.t),
        ['30s', '30s'],
      );
      await assert.rejects(short.query('SELECT pg_sleep(2)'), { code: '57014' });
    } finally {
      await pool.end();
      await short.end();
    }
  });
});

/** A real pino logger whose lines land in `lines`. */
function capture(lines: string[]) {
  return pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
}

describe('a pool being closed', () => {
  it('does not report a connection terminated while the pool closes it', async () => {
    const warnings: string[] = [];
    const pool = createPool(db.url, { max: 1, log: capture(warnings) });
    await pool.query('SELECT 1');
    await pool.end();
    // pool.end() resolves before the server has read the connection's Terminate: a
    // DROP DATABASE … WITH (FORCE) or a restart in that moment sends a FATAL that
    // pg-pool forwards to the pool's 'error' event (seen in bench runs). The race is
    // not reproducible on demand, so the event is emitted as pg-pool emits it.
    pool.emit(
      'error',
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings, []);
  });

  it('still reports an idle connection that fails while the pool is open', async () => {
    const warnings: string[] = [];
    const pool = createPool(db.url, { max: 1, log: capture(warnings) });
    try {
      const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const failed = new Promise<void>((resolve) => pool.once('error', () => resolve()));
      await db.pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await failed;
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /idle database connection failed/);
    } finally {
      await pool.end();
    }
  });
});

describe('readiness probe', () => {
  it('a flood of checks costs the database at most one query per second', async () => {
    const probe = new DatabaseProbe({ url: db.url, schema: 'jobvisor' });
    try {
      const first = await Promise.all(Array.from({ length: 2000 }, () => probe.check()));
      assert.ok(first.every((r) => r.ready));
      assert.equal(probe.probes, 1);
      const t0 = Date.now();
      while (Date.now() - t0 < 2500) await Promise.all(Array.from({ length: 200 }, () => probe.check()));
      const seconds = (Date.now() - t0) / 1000;
      assert.ok(probe.probes <= 1 + Math.ceil(seconds), `${probe.probes} probes in ${seconds} s`);
    } finally {
      await probe.close();
    }
  });

  it('a silent database makes the probe fail within its timeout, without hanging', async () => {
    const proxy = await startProxy({ host: PG.hostname, port: Number(PG.port) });
    const probe = new DatabaseProbe({ url: proxy.urlFor(db.url), schema: 'jobvisor', timeoutMs: 500, maxAgeMs: 0 });
    try {
      assert.deepEqual(await probe.check(), { ready: true });
      proxy.cut();
      const r = await probe.check();
      assert.equal(r.ready, false);
      assert.match(r.reason ?? '', /unreachable/);
      proxy.heal();
      await until(async () => (await probe.check()).ready, 10_000, 'the probe to reconnect');
    } finally {
      await probe.close();
      await proxy.close();
    }
  });
});

describe('supervisor probes', () => {
  it('3 × 2,000 concurrent /readyz requests at 10 ms database latency cost no lease', async () => {
    const proxy = await latencyProxy(10);
    const sup = await spawnSupervisor({
      databaseUrl: proxy.url,
      tasksDir,
      config: {
        jobs: { lease: '3s' },
        queues: { default: { concurrency: 20, jobsPerThread: 20 } },
        database: { poolSize: 4 },
      },
    });
    // Another replica, directly connected, whose reaper takes back any lease that expires.
    const rescuer = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir,
      config: { jobs: { lease: '3s' }, reaper: { interval: '500ms' }, queues: { elsewhere: { concurrency: 1 } } },
    });
    try {
      await db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'ops_sleep', '{"ms": 8000}' FROM generate_series(1, 20)`,
      );
      await until(
        async () =>
          (await db.pool.query(`SELECT 1 FROM jobvisor.jobs WHERE status = 'running'`)).rowCount === 20 || undefined,
        15_000,
        '20 running jobs',
      );
      let notReady = 0;
      const t0 = Date.now();
      for (let wave = 0; wave < 3; wave++) {
        const answers = await Promise.all(Array.from({ length: 2000 }, () => get(sup.metricsPort, '/readyz', 30_000)));
        notReady += answers.filter((a) => a.status !== 200).length;
      }
      const floodMs = Date.now() - t0;
      await until(
        async () =>
          (await db.pool.query(`SELECT 1 FROM jobvisor.jobs WHERE status = 'done'`)).rowCount === 20 || undefined,
        60_000,
        '20 done jobs',
      );
      const reran = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE attempts > 1`,
      );
      const lost = [...sup.logs, ...rescuer.logs].filter((l) =>
        /lease lost|expired leases reaped/.test(String(l.msg)),
      ).length;
      process.stdout.write(
        `# 3 × 2,000 /readyz in ${floodMs} ms: ${notReady} not ready, ${reran.rows[0]!.n} of 20 jobs ran twice, ${lost} lease-loss log lines\n`,
      );
      assert.equal(notReady, 0, 'the flood made the supervisor report itself not ready');
      assert.equal(reran.rows[0]!.n, 0, 'every job ran once');
      assert.equal(lost, 0, 'no lease lost or reaped');
    } finally {
      await Promise.all([sup.stop(), rescuer.stop()]);
      await proxy.close();
      await db.pool.query('TRUNCATE jobvisor.jobs');
    }
  });

  it('/metrics answers within its deadline while the database is silent', async () => {
    const proxy = await startProxy({ host: PG.hostname, port: Number(PG.port) });
    const sup = await spawnSupervisor({
      databaseUrl: proxy.urlFor(db.url),
      tasksDir,
      config: { metrics: { port: 0, host: '127.0.0.1', refresh: '1s' } },
    });
    try {
      const healthy = await get(sup.metricsPort, '/metrics');
      assert.match(healthy.body, /^jobvisor_database_gauges_up 1$/m);
      proxy.cut();
      await new Promise((r) => setTimeout(r, 1100)); // the cached gauges age past metrics.refresh
      const t0 = Date.now();
      const silent = await get(sup.metricsPort, '/metrics', 10_000);
      const ms = Date.now() - t0;
      assert.equal(silent.status, 200);
      assert.match(silent.body, /^jobvisor_database_gauges_up 0$/m);
      assert.match(silent.body, /^process_resident_memory_bytes /m);
      const ready = await get(sup.metricsPort, '/readyz', 10_000);
      assert.equal(ready.status, 503);
      process.stdout.write(`# /metrics with a silent database answered in ${ms} ms; /readyz: ${ready.body}\n`);
    } finally {
      proxy.heal();
      await sup.stop();
      await proxy.close();
    }
  });

  it('a loop failing for longer than a lease turns /readyz to 503 naming it, and back', async () => {
    // The reaper's update (and only it) is refused while this trigger exists.
    await db.pool.query(`
      CREATE FUNCTION public.refuse_reap() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'reaper refused by test'; END $$;
      CREATE TRIGGER refuse_reap BEFORE UPDATE ON jobvisor.jobs FOR EACH ROW
        WHEN (NEW.last_error LIKE 'lease expired%') EXECUTE FUNCTION public.refuse_reap();
      INSERT INTO jobvisor.jobs (kind, payload, status, attempts, locked_by, locked_until)
        VALUES ('ops_sleep', '{"ms": 1}', 'running', 1, 'gone:1:abc', now() - interval '1 minute');`);
    const sup = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir,
      config: { jobs: { lease: '3s' }, reaper: { interval: '500ms' } },
    });
    try {
      const failing = await until(
        async () => {
          const r = await get(sup.metricsPort, '/readyz');
          return r.status === 503 ? r : undefined;
        },
        20_000,
        '/readyz to turn 503',
      );
      assert.match(failing.body, /reaper/);
      const metrics = await get(sup.metricsPort, '/metrics');
      assert.match(metrics.body, /^jobvisor_loop_failing_seconds\{loop="reaper"\} \d/m);
      await sup.waitForLog(/loop failing/, 5000, (l) => l.loop === 'reaper');
      await db.pool.query('DROP TRIGGER refuse_reap ON jobvisor.jobs');
      await until(async () => (await get(sup.metricsPort, '/readyz')).status === 200, 20_000, '/readyz back to 200');
      await sup.waitForLog(/loop recovered/, 5000, (l) => l.loop === 'reaper');
    } finally {
      await sup.stop();
      await db.pool.query('DROP TRIGGER IF EXISTS refuse_reap ON jobvisor.jobs; TRUNCATE jobvisor.jobs');
    }
  });
});
