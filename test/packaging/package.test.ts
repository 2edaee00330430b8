/**
 * The package as a user gets it: `npm pack` (prepack builds dist/) of a copy of
 * the working tree, the tarball installed into two throw-away apps of their
 * own (package.json each), with one small dependency of the apps' own from the
 * registry that jobvisor does not depend on (slugify):
 *   - an ES module app in TypeScript, run by the app's tsx: migrate(), enqueue
 *     inside the app's own transaction (a rolled-back one leaves no job), a .ts
 *     and a .js task importing an app module and slugify, run by run(); then the
 *     same tasks by `npx jobvisor start` reading the app's jobvisor.config.json;
 *     /metrics answering, SIGTERM drains and exits 0; its types checked by the
 *     project's tsc under moduleResolution node16 (not in a cross-version slice);
 *   - a CommonJS app: require('jobvisor') (ESM loaded through require), the
 *     same transaction and a CommonJS task through run().
 * (Apps that declare their kinds, under each module setting and TypeScript 5.9
 * and 7: test/packaging/package_types.test.ts.)
 * Also: the tarball's contents, the installed size, the built-in thumbnail
 * task (mapped with builtinTask) dead-lettered in one line without the optional
 * sharp, and the one-line warning of `start` when OTEL_* asks for traces
 * without the SDK. And nothing of jobvisor's demo in the app unless asked: no
 * built-in task runs a kind the app did not register, no `cpu` queue, no
 * schedule, no warning about built-ins; a 4-field cron is refused; a new
 * schedule is not back-filled.
 *
 * Needs the npm registry (or npm's cache) for the apps' dependencies: skipped
 * with the reason when neither answers.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { enqueue } from '../../src/queue/enqueue.ts';
import { report } from '../helpers/chaos/measure.ts';
import { createLoginRole, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { cleanEnv, depVersion, exec, npmInstall, packedTarball, write, type Ran } from '../helpers/packed.ts';
import { until } from '../helpers/poll.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(path.join(tmpdir(), 'jobvisor-package-'));
/** The apps' own dependency, which jobvisor does not have. */
const APP_DEPENDENCY = 'slugify@1.6.9';
const TSC = path.join(root, 'node_modules/typescript/bin/tsc');

function duBytes(dir: string): number {
  return Number(exec('du', ['-sb', dir], work).stdout.split('\t')[0]);
}

/** The ES module app in TypeScript, run by its own tsx. */
const ESM_APP: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'esm-app', version: '1.0.0', private: true, type: 'module' }),
  'src/greeting.ts': `export function greeting(name: string): string {\n  return \`Hello, \${name}!\`;\n}\n`,
  'lib/plain.js': `export const shout = (s) => s.toUpperCase();\n`,
  'tasks/greet.ts': `import slugify from 'slugify';
import type { TaskContext } from 'jobvisor';
import { greeting } from '../src/greeting.js';

export default async function greet(payload: { name: string }, ctx: TaskContext) {
  return { text: greeting(payload.name), slug: slugify(payload.name, { lower: true }), attempt: ctx.job.attempt };
}
`,
  'tasks/legacy.js': `import slugify from 'slugify';
import { shout } from '../lib/plain.js';

export default async function legacy(payload) {
  return { text: shout(payload.name), slug: slugify(payload.name) };
}
`,
  'jobvisor.config.json': JSON.stringify({ tasks: { dir: 'tasks' }, metrics: { port: 0, host: '127.0.0.1' } }),
  'main.ts': `import { builtinTask, enqueue, migrate, run } from 'jobvisor';
import pg from 'pg';

const url = process.env.DATABASE_URL as string;
const pool = new pg.Pool({ connectionString: url, max: 2 });
await migrate(pool);
await pool.query('CREATE TABLE IF NOT EXISTS orders (id serial PRIMARY KEY, name text NOT NULL)');

/** An order and its job in one transaction of the app's, committed or rolled back. */
async function order(name: string, commit: boolean): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO orders (name) VALUES ($1)', [name]);
    const { id } = await enqueue(client, 'greet', { name });
    await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    return id as string;
  } finally {
    client.release();
  }
}

const committed = await order('Ada Lovelace', true);
const rolledBack = await order('Rolled Back', false);
const legacy = (await enqueue(pool, 'legacy', { name: 'Grace Hopper' })).id as string;
const thumbnail = (await enqueue(pool, 'thumbnail', { source: 'photo.png', widths: [64] })).id as string;
const ids = [committed, legacy, thumbnail];

const runner = await run({
  connectionString: url,
  tasks: {
    greet: new URL('./tasks/greet.ts', import.meta.url),
    legacy: new URL('./tasks/legacy.js', import.meta.url),
    thumbnail: builtinTask('thumbnail'), // a built-in runs only where the app asks for it
  },
  metrics: { port: 0, host: '127.0.0.1' },
  queues: { default: { concurrency: 4 } },
});
let firstDoneAt = 0;
runner.events.on('job:completed', () => (firstDoneAt ||= Date.now()));
const settled = async () =>
  (await pool.query("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status IN ('done', 'failed')", [ids])).rows[0].n;
const deadline = Date.now() + 60_000;
while ((await settled()) < ids.length && Date.now() < deadline) {
  await new Promise((resolve) => {
    runner.events.once('job:completed', resolve);
    runner.events.once('job:dead', resolve);
    setTimeout(resolve, 1000);
  });
}
const metrics = await fetch(\`http://127.0.0.1:\${runner.metricsPort}/metrics\`);
const metricsText = await metrics.text();
await runner.stop();
const rows = (await pool.query('SELECT id::text, kind, status, result, last_error FROM jobvisor.jobs ORDER BY id')).rows;
const orders = (await pool.query('SELECT name FROM orders ORDER BY id')).rows.map((r) => r.name);
await pool.end();
console.log(JSON.stringify({ committed, rolledBack, legacy, thumbnail, rows, orders, firstDoneAt,
  metricsStatus: metrics.status, metricsOk: metricsText.includes('jobvisor_jobs_completed_total') }));
`,
  // Types: a deliberate misuse must be an error, or the types are not really resolved.
  'types.ts': `import { enqueue, run, type Runner, type TaskContext } from 'jobvisor';
import pg from 'pg';

export async function start(): Promise<Runner> {
  const pool = new pg.Pool();
  await enqueue(pool, 'greet', { name: 'x' }, { queue: 'default', delay: '10s' });
  // @ts-expect-error queue is a string
  await enqueue(pool, 'greet', { name: 'x' }, { queue: 5 });
  return run({ pool, tasks: { greet: new URL('./tasks/greet.ts', import.meta.url) } });
}
export const kind = (ctx: TaskContext): string => ctx.job.kind;
`,
};

/** The CommonJS app: require('jobvisor'). */
const CJS_APP: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'cjs-app', version: '1.0.0', private: true, type: 'commonjs' }),
  'lib/loud.js': `exports.loud = (s) => s.toUpperCase() + '!';\n`,
  'tasks/shout.js': `const slugify = require('slugify');
const { loud } = require('../lib/loud.js');

module.exports = async function shout(payload) {
  return { text: loud(payload.word), slug: slugify(payload.word, { lower: true }) };
};
`,
  'index.js': `const path = require('node:path');
const pg = require('pg');
const { enqueue, migrate, run } = require('jobvisor');

async function main() {
  const url = process.env.DATABASE_URL;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  await migrate(pool);
  const inTransaction = async (word, commit) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { id } = await enqueue(client, 'shout', { word });
      await client.query(commit ? 'COMMIT' : 'ROLLBACK');
      return id;
    } finally {
      client.release();
    }
  };
  const committed = await inTransaction('Common JS', true);
  const rolledBack = await inTransaction('never', false);
  const runner = await run({ connectionString: url, tasks: { shout: path.join(__dirname, 'tasks', 'shout.js') } });
  const done = () => pool.query('SELECT status, result FROM jobvisor.jobs WHERE id = $1', [committed]);
  const deadline = Date.now() + 60_000;
  while ((await done()).rows[0].status !== 'done' && Date.now() < deadline)
    await new Promise((resolve) => { runner.events.once('job:completed', resolve); setTimeout(resolve, 1000); });
  await runner.stop();
  const row = (await done()).rows[0];
  const rolled = (await pool.query('SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = $1', [rolledBack])).rows[0].n;
  await pool.end();
  console.log(JSON.stringify({ row, rolled }));
}
main().catch((err) => { console.error(err); process.exit(1); });
`,
};

let db: TestDatabase;
let tarball = '';
let skipReason: string | undefined;
const esmApp = path.join(work, 'esm-app');
const cjsApp = path.join(work, 'cjs-app');
const timings: Record<string, number> = {};
let cjsInstall: (Ran & { offline?: string }) | undefined;

before(async () => {
  db = await createTestDatabase('package');
  // npm pack of a copy of the tree, shared with the other tests that install the package.
  const packed = packedTarball();
  timings.packMs = packed.packMs;
  tarball = packed.tarball;

  write(esmApp, ESM_APP);
  write(cjsApp, CJS_APP);
  const t0 = Date.now();
  const esm = npmInstall(esmApp, [
    tarball,
    APP_DEPENDENCY,
    `pg@${depVersion('pg')}`,
    `tsx@${depVersion('tsx')}`,
    `@types/node@${depVersion('@types/node')}`,
    `@types/pg@${depVersion('@types/pg')}`,
  ]);
  if (esm.offline) {
    skipReason = esm.offline;
    return;
  }
  timings.installStart = t0;
  timings.esmInstallMs = esm.ms;
  cjsInstall = npmInstall(cjsApp, [tarball, APP_DEPENDENCY, `pg@${depVersion('pg')}`]);
});

after(async () => {
  await db.drop();
  if (process.env.JOBVISOR_TEST_KEEP !== '1') rmSync(work, { recursive: true, force: true });
});

/**
 * Everything the package may ship: compiled JavaScript and its types, the bin, the migrations, the
 * config files jobvisor reads and the two examples the docs link to, the README, LICENSE, CHANGELOG.
 */
const SHIPPED =
  /^(package\.json|README\.md|LICENSE|CHANGELOG\.md|bin\/jobvisor\.js|dist\/[\w/-]+\.(js|d\.ts|d\.cts)|migrations\/\d{3}_\w+\.sql|config\/(default|production|example\.first|example\.production)\.json)$/;

/** The files of a tarball, without npm's `package/` prefix. */
const tarballFiles = () =>
  exec('tar', ['tzf', tarball], work)
    .stdout.split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));

describe('the packed tarball', () => {
  test('holds compiled JavaScript, types, migrations and the bin; no sources, tests, bench or fixtures', () => {
    const files = tarballFiles();
    for (const needed of [
      'dist/entry/client.js',
      'dist/entry/client.d.ts',
      'dist/entry/client.d.cts',
      'dist/entry/worker.js',
      'dist/entry/dashboard.d.cts',
      'config/example.first.json',
      'config/example.production.json',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'bin/jobvisor.js',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/index.d.cts',
      'dist/queue/enqueue_types.d.cts',
      'dist/cli/bin.js',
      'dist/worker/entry.js',
      'dist/worker/traced_entry.js',
      'dist/worker/options_thread.js',
      'dist/tasks/thumbnail.js',
      'migrations/001_jobs.sql',
      'config/default.json',
    ])
      assert.ok(files.includes(needed), `the tarball has ${needed}`);
    const migrations = readdirSync(path.join(root, 'migrations'));
    assert.deepEqual(
      files.filter((f) => f.startsWith('migrations/')).sort(),
      migrations.map((m) => `migrations/${m}`).sort(),
    );
    const stray = files.filter((f) =>
      /^(src|test|bench|scripts|deploy|grafana)\/|fixtures|\.test\.|\.map$|\.mjs$/.test(f),
    );
    assert.deepEqual(stray, []);
    assert.deepEqual(
      files.filter((f) => !SHIPPED.test(f)),
      [],
      'files the package does not need (package.json `files`)',
    );
    const exported = JSON.stringify(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).exports);
    for (const [, target] of exported.matchAll(/"\.\/([^"]+\.[a-z.]+)"/g))
      assert.ok(files.includes(target as string), `the tarball has ${target}, named by package.json exports`);
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, unknown>
    >;
    for (const name of ['sharp', 'pdfkit', '@opentelemetry/sdk-node'])
      assert.equal(pkg.dependencies?.[name], undefined, `${name} is not a dependency`);
  });
});

describe('npm pack of the checkout', () => {
  test('lists, besides dist/, the same files as the tarball the tests install (npm pack --dry-run)', () => {
    const r = exec('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], root);
    assert.equal(r.status, 0, r.stderr);
    const listed = (JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0]?.files.map((f) => f.path);
    const outsideDist = (files: string[]) => files.filter((f) => !f.startsWith('dist/')).sort();
    assert.deepEqual(outsideDist(listed ?? []), outsideDist(tarballFiles()));
  });
});

describe('installed into an ES module app in TypeScript', () => {
  test('run(): jobs enqueued in the app transaction run as .ts and .js tasks with the app module and dependency', (t) => {
    if (skipReason) return t.skip(skipReason);
    const r = exec(path.join(esmApp, 'node_modules/.bin/tsx'), ['main.ts'], esmApp, cleanEnv({ DATABASE_URL: db.url }));
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as {
      committed: string;
      rolledBack: string;
      legacy: string;
      thumbnail: string;
      firstDoneAt: number;
      rows: Array<{ id: string; kind: string; status: string; result: Record<string, unknown>; last_error: string }>;
      orders: string[];
      metricsStatus: number;
      metricsOk: boolean;
    };
    timings.firstJobDoneMs = out.firstDoneAt - (timings.installStart as number);
    t.diagnostic(
      `npm install ${timings.esmInstallMs} ms; install start to first job done ${timings.firstJobDoneMs} ms; npm pack ${timings.packMs} ms`,
    );
    const row = (id: string) => out.rows.find((x) => x.id === id);
    assert.deepEqual(out.orders, ['Ada Lovelace'], 'the rolled-back order is gone');
    assert.equal(row(out.rolledBack), undefined, 'the rolled-back transaction left no job');
    assert.equal(row(out.committed)?.status, 'done');
    assert.deepEqual(row(out.committed)?.result, { text: 'Hello, Ada Lovelace!', slug: 'ada-lovelace', attempt: 1 });
    assert.equal(row(out.legacy)?.status, 'done');
    assert.deepEqual(row(out.legacy)?.result, { text: 'GRACE HOPPER', slug: 'Grace-Hopper' });
    // Without the optional sharp the built-in thumbnail task dead-letters at once, in one line.
    assert.equal(row(out.thumbnail)?.status, 'failed');
    assert.equal(
      row(out.thumbnail)?.last_error,
      'PermanentError: the thumbnail task needs the optional package sharp, which is not installed: npm install sharp',
    );
    assert.equal(out.metricsStatus, 200);
    assert.ok(out.metricsOk, '/metrics counts completed jobs');
  });

  test('npx jobvisor start reads the app jobvisor.config.json, runs its tasks, serves /metrics and drains on SIGTERM', async (t) => {
    if (skipReason) return t.skip(skipReason);
    // OTEL_* asks for traces; the SDK is an optional peer the app did not install: one line says so.
    const child = spawn('npx', ['jobvisor', 'start'], {
      cwd: esmApp,
      env: cleanEnv({ DATABASE_URL: db.url, OTEL_TRACES_EXPORTER: 'otlp', LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs = collectLines(child);
    try {
      const ready = await until(
        'the ready line',
        () => logs.lines.find((l) => l.msg === 'ready'),
        Boolean,
        60_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${logs.text()}`);
      });
      const port = ready?.metricsPort as number;
      const otel = logs.lines.filter((l) => /OpenTelemetry/.test(String(l.msg)));
      assert.equal(otel.length, 1, logs.text());
      assert.equal(otel[0]?.level, 40);
      assert.match(String(otel[0]?.msg), /OTEL_\* is set but the OpenTelemetry SDK is not installed/);
      const greet = (await enqueue(db.pool, 'greet', { name: 'Edsger Dijkstra' })).id;
      const legacy = (await enqueue(db.pool, 'legacy', { name: 'Barbara Liskov' })).id;
      const rows = await until(
        'both jobs done',
        async () =>
          (
            await db.pool.query('SELECT id::text, status, result FROM jobvisor.jobs WHERE id = ANY($1)', [
              [greet, legacy],
            ])
          ).rows,
        (rs) => rs.length === 2 && rs.every((r) => r.status === 'done'),
        60_000,
      );
      assert.equal(rows.find((r) => r.id === greet)?.result.slug, 'edsger-dijkstra');
      assert.equal(rows.find((r) => r.id === legacy)?.result.text, 'BARBARA LISKOV');
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /jobvisor_jobs_completed_total\{[^}]*kind="greet"/);
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
        child.on('exit', (code, signal) => resolve([code, signal])),
      );
      // The supervisor itself gets the SIGTERM, as under tini in an image: npm exec (npx) ends
      // on a SIGTERM of its own without waiting for its child, so it is not the one signalled.
      process.kill(ready?.pid as number, 'SIGTERM');
      assert.deepEqual(await exited, [0, null], logs.text());
      assert.ok(
        logs.lines.some((l) => l.msg === 'supervisor stopped'),
        'drained',
      );
    } finally {
      child.kill('SIGKILL');
    }
  });

  // ES module files under nodenext and bundler, by TypeScript 5.9 and 7: test/packaging/package_types.test.ts.
  test('its types resolve under moduleResolution node16', (t) => {
    if (skipReason) return t.skip(skipReason);
    // tsc's verdict does not depend on the Node.js that runs it: the run's own Node.js checks it.
    const slice = process.env.JOBVISOR_TEST_SLICE;
    if (slice) return t.skip(`types are checked by npm test's own Node.js, not in the ${slice} slice`);
    writeFileSync(
      path.join(esmApp, 'tsconfig.node16.json'),
      JSON.stringify({
        compilerOptions: { module: 'node16', target: 'es2022', strict: true, noEmit: true, types: ['node'] },
        files: ['types.ts', 'main.ts', 'tasks/greet.ts'],
      }),
    );
    const r = exec(process.execPath, [TSC, '-p', 'tsconfig.node16.json'], esmApp);
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});

describe('installed into a CommonJS app', () => {
  test('is at most 30 MB of node_modules: jobvisor and its dependencies, without the optional peers', (t) => {
    if (skipReason) return t.skip(skipReason);
    if (cjsInstall?.offline) return t.skip(cjsInstall.offline);
    // The app installed the tarball, pg (a dependency of jobvisor's too) and slugify, its own.
    const modules = path.join(cjsApp, 'node_modules');
    const total = duBytes(modules) - duBytes(path.join(modules, 'slugify'));
    t.diagnostic(`node_modules of jobvisor: ${(total / 1e6).toFixed(1)} MB`);
    assert.ok(total <= 30e6, `${(total / 1e6).toFixed(1)} MB`);
    for (const optional of ['sharp', 'pdfkit', '@opentelemetry/sdk-node'])
      assert.ok(!existsSync(path.join(modules, optional)), `${optional} is not installed`);
  });

  test('require("jobvisor") enqueues in a transaction and run() runs a CommonJS task with the app module and dependency', (t) => {
    if (skipReason) return t.skip(skipReason);
    if (cjsInstall?.offline) return t.skip(cjsInstall.offline);
    const r = exec(process.execPath, ['index.js'], cjsApp, cleanEnv({ DATABASE_URL: db.url }));
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(r.stderr, /ERR_REQUIRE_ASYNC_MODULE|top-level await/);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as {
      row: { status: string; result: unknown };
      rolled: number;
    };
    assert.deepEqual(out.row, { status: 'done', result: { text: 'COMMON JS!', slug: 'common-js' } });
    assert.equal(out.rolled, 0, 'the rolled-back transaction left no job');
  });
});

/** Scripts of the ES module app for the cases below: nothing of jobvisor's demo runs unless asked. */
const DEMO_FREE_APP: Record<string, string> = {
  // A worker that registers legacy only; a welcome_email job (the app forgot its task) must not run.
  'unregistered.mjs': `import { enqueue, run } from 'jobvisor';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
const runner = await run({
  connectionString: process.env.DATABASE_URL,
  tasks: { legacy: new URL('./tasks/legacy.js', import.meta.url) },
  backoff: { base: '100ms', max: '200ms' },
});
const { id } = await enqueue(pool, 'welcome_email', { user_id: 1 }, { maxAttempts: 2 });
const row = async () => (await pool.query('SELECT status, attempts, last_error FROM jobvisor.jobs WHERE id = $1', [id])).rows[0];
const deadline = Date.now() + 30_000;
while ((await row()).status !== 'failed' && Date.now() < deadline)
  await new Promise((resolve) => { runner.events.once('job:dead', resolve); setTimeout(resolve, 1000); });
await runner.stop();
const emails = (await pool.query("SELECT to_regclass('public.emails_sent') IS NOT NULL AS present")).rows[0].present;
console.log(JSON.stringify({ job: await row(), emails }));
await pool.end();
`,
  // run() with a wrong password: rejects, naming the server's reason, within seconds.
  'wrong_password.mjs': `import { run } from 'jobvisor';

const t0 = performance.now();
try {
  await run({ connectionString: process.env.DATABASE_URL, tasks: { legacy: new URL('./tasks/legacy.js', import.meta.url) } });
  console.log(JSON.stringify({ started: true }));
  process.exit(1);
} catch (err) {
  const ms = Math.round(performance.now() - t0);
  console.log(JSON.stringify({ name: err.name, code: err.code, sqlstate: err.sqlstate, message: err.message, ms }));
}
`,
  // run() refuses a 4-field cron.
  'four_fields.mjs': `import { run } from 'jobvisor';

try {
  await run({ connectionString: process.env.DATABASE_URL, schedules: [{ name: 'x', cron: '*/5 * * *', kind: 'greet' }] });
  console.log(JSON.stringify({ started: true }));
  process.exit(1);
} catch (err) {
  console.log(JSON.stringify({ name: err.name, code: err.code, message: err.message }));
}
`,
  'four_fields.json': JSON.stringify({ schedules: [{ name: 'x', cron: '*/5 * * *', kind: 'greet' }] }),
  // A new every-5-seconds schedule: its first fire, and what was enqueued before it.
  'new_schedule.mjs': `import { run } from 'jobvisor';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
const startedAt = new Date();
const runner = await run({
  connectionString: process.env.DATABASE_URL,
  tasks: { legacy: new URL('./tasks/legacy.js', import.meta.url) },
  schedules: [{ name: 'pkg_every5', cron: '*/5 * * * * *', kind: 'legacy', payload: { name: 'cron' } }],
  scheduler: { interval: '200ms' },
});
await new Promise((resolve, reject) => {
  runner.events.once('schedule:fired', resolve);
  setTimeout(() => reject(new Error('no fire within 20 s')), 20_000).unref();
});
await runner.stop();
const stoppedAt = new Date();
const jobs = (await pool.query("SELECT run_at FROM jobvisor.jobs WHERE unique_key LIKE 'schedule:pkg_every5:%'")).rows;
const seen = (await pool.query("SELECT first_seen_at FROM jobvisor.schedules WHERE name = 'pkg_every5'")).rows;
console.log(JSON.stringify({ startedAt, stoppedAt, runAts: jobs.map((j) => j.run_at), seen: seen.map((s) => s.first_seen_at) }));
await pool.end();
`,
};

/** Lines of run()/start logs (JSON) that speak of a built-in task or a queue of one. */
const aboutBuiltins = (lines: Array<Record<string, unknown>>) =>
  lines.filter(
    (l) => l.level !== undefined && /thumbnail|daily_report|welcome_email|asks for queue|"cpu"/.test(JSON.stringify(l)),
  );

/** JSON lines of a script's stdout (non-JSON lines as { raw }). */
const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { raw: line };
      }
    });

describe("installed into an app: nothing of jobvisor's demo runs unless the app asks for it", () => {
  before(() => {
    if (!skipReason) write(esmApp, DEMO_FREE_APP);
  });

  test('a job of a kind the app did not register fails with TaskLoadError and is never run by a built-in', (t) => {
    if (skipReason) return t.skip(skipReason);
    const r = exec(process.execPath, ['unregistered.mjs'], esmApp, cleanEnv({ DATABASE_URL: db.url }));
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const lines = jsonLines(r.stdout);
    const out = lines.at(-1) as { job: { status: string; attempts: number; last_error: string }; emails: boolean };
    assert.equal(out.job.status, 'failed', 'a dead letter after its attempts');
    assert.equal(out.job.attempts, 2);
    assert.match(
      out.job.last_error,
      /^TaskLoadError: no task for kind "welcome_email" \(looked in the tasks map\); welcome_email is one of jobvisor's built-in tasks/,
    );
    assert.equal(out.emails, false, 'the built-in welcome_email never ran: no public.emails_sent');
    assert.deepEqual(lines.find((l) => l.msg === 'serving task kinds')?.kinds, ['legacy']);
    // Only the job's own failure lines name the kind; nothing warns about built-ins.
    assert.deepEqual(
      aboutBuiltins(lines).filter((l) => !/^job (failed|dead)/.test(String(l.msg))),
      [],
    );
  });

  test('jobvisor start in the app serves no cpu queue and no schedule, and says nothing of built-ins', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const child = spawn(path.join(esmApp, 'node_modules/.bin/jobvisor'), ['start'], {
      cwd: esmApp,
      env: cleanEnv({ DATABASE_URL: db.url, LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs = collectLines(child);
    try {
      const ready = await until(
        'the ready line',
        () => logs.lines.find((l) => l.msg === 'ready'),
        Boolean,
        60_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${logs.text()}`);
      });
      assert.deepEqual(Object.keys(ready?.queues as object), ['default'], 'exactly the queues the app configured');
      assert.deepEqual(logs.lines.find((l) => l.msg === 'serving task kinds')?.kinds, ['greet', 'legacy']);
      const schedules = (await db.pool.query('SELECT name FROM jobvisor.schedules')).rows.map((r) => r.name as string);
      assert.ok(!schedules.includes('daily_report'), `no daily_report schedule: ${schedules.join(', ')}`);
      const reports = await db.pool.query("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE kind = 'daily_report'");
      assert.equal(reports.rows[0]?.n, 0);
      assert.deepEqual(aboutBuiltins(logs.lines), [], logs.text());
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      process.kill(ready?.pid as number, 'SIGTERM');
      assert.equal(await exited, 0, logs.text());
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('a wrong password makes run() reject and jobvisor start exit 1, naming 28P01, within seconds', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const role = await createLoginRole(db, 'pkg_refused');
    t.after(() => role.drop());
    const url = new URL(role.pool.options.connectionString as string);
    url.password = 'not-the-password';
    const env = cleanEnv({ DATABASE_URL: url.toString() });
    const r = exec(process.execPath, ['wrong_password.mjs'], esmApp, env, 60_000);
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as Record<string, unknown>;
    assert.equal(out.name, 'DatabaseAccessError', r.stdout);
    assert.equal(out.code, 'DB_ACCESS_REFUSED');
    assert.equal(out.sqlstate, '28P01');
    assert.match(String(out.message), /password authentication failed for user "pkg_refused_\w+" \(SQLSTATE 28P01\)/);
    assert.ok(Number(out.ms) < 10_000, `rejected after ${String(out.ms)} ms`);
    assert.doesNotMatch(r.stdout + r.stderr, /not-the-password/, 'the password never reaches the output');
    const start = exec(path.join(esmApp, 'node_modules/.bin/jobvisor'), ['start'], esmApp, env, 60_000);
    assert.equal(start.status, 1, start.stdout + start.stderr);
    assert.match(start.stderr, /password authentication failed for user "pkg_refused_\w+" \(SQLSTATE 28P01\)/);
    assert.ok(start.ms < 20_000, `start exited after ${start.ms} ms`);
    assert.doesNotMatch(start.stdout + start.stderr, /not-the-password/);
    report('package.wrong_password', { runRejectedMs: out.ms, startExitMs: start.ms });
  });

  test('a 4-field cron is refused by run() and by jobvisor start, naming the count', (t) => {
    if (skipReason) return t.skip(skipReason);
    const env = cleanEnv({ DATABASE_URL: db.url });
    const r = exec(process.execPath, ['four_fields.mjs'], esmApp, env);
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as {
      name: string;
      code: string;
      message: string;
    };
    assert.equal(out.code, 'CONFIG_INVALID');
    assert.match(out.message, /schedules\[0\]\.cron "\*\/5 \* \* \*" has 4 fields: a cron expression has 5/);
    const start = exec(path.join(esmApp, 'node_modules/.bin/jobvisor'), ['start'], esmApp, {
      ...env,
      JOBVISOR_CONFIG: 'four_fields.json',
    });
    assert.equal(start.status, 2, start.stdout + start.stderr);
    assert.match(start.stderr, /^jobvisor: invalid configuration: .*"\*\/5 \* \* \*" has 4 fields/m);
  });

  test('a new */5-second schedule adds no job for times before it existed', (t) => {
    if (skipReason) return t.skip(skipReason);
    const r = exec(process.execPath, ['new_schedule.mjs'], esmApp, cleanEnv({ DATABASE_URL: db.url }));
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as {
      startedAt: string;
      stoppedAt: string;
      runAts: string[];
      seen: string[];
    };
    assert.equal(out.seen.length, 1, 'its first sighting is recorded');
    const firstSeen = Date.parse(out.seen[0] as string);
    assert.ok(firstSeen >= Date.parse(out.startedAt));
    const fires = out.runAts.map((at) => Date.parse(at));
    // The old catch-up enqueued 720 jobs here, one per 5 s of the hour before.
    assert.ok(
      fires.length >= 1 && fires.length <= 1 + (Date.parse(out.stoppedAt) - firstSeen) / 5000,
      `${fires.length} jobs`,
    );
    for (const at of fires)
      assert.ok(at > firstSeen, `fire time ${new Date(at).toISOString()} after its first sighting`);
  });
});

function collectLines(child: ChildProcess): { lines: Array<Record<string, unknown>>; text(): string } {
  const lines: Array<Record<string, unknown>> = [];
  let all = '';
  let partial = '';
  const onData = (d: Buffer) => {
    all += d.toString();
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ raw: line });
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', (d: Buffer) => (all += d.toString()));
  return { lines, text: () => all };
}
