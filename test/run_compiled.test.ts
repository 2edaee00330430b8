/**
 * `.ts` tasks from compiled jobvisor, in a plain `node` process with no
 * TypeScript loader preloaded: what an app that installed the package runs.
 * The checkout's own runs always have tsx active, so they never saw that the
 * loader imported the task, registered tsx on failure, then imported the same
 * URL again, which Node answers from its record of the failed import
 * ("Unknown file extension .ts" on every attempt).
 *
 *  - an app whose tsx can be resolved from its tasks: the job runs;
 *  - an app with no TypeScript loader at all: run() and `jobvisor start`
 *    refuse at start with one line, instead of failing every job.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runProcess } from './helpers/cli.ts';
import { compilePackage, type CompiledPackage } from './helpers/compile.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let db: TestDatabase;
let pkg: CompiledPackage;
/** An app inside the checkout: its tasks resolve the checkout's tsx, as an app's resolve its own. */
let withTsx: string;
/** An app in the system's temporary folder: no tsx anywhere above it. */
let withoutTsx: string;

function writeApp(dir: string): void {
  mkdirSync(path.join(dir, 'tasks'), { recursive: true });
  mkdirSync(path.join(dir, 'lib'), { recursive: true });
  writeFileSync(path.join(dir, 'lib/name.ts'), "export const who = (p: { name: string }): string => p.name + '!';\n");
  writeFileSync(
    path.join(dir, 'tasks/hello.ts'),
    "import { who } from '../lib/name.ts';\nexport default async (p: { name: string }) => ({ hello: who(p) });\n",
  );
}

/** A driver the app would write: run() with the task, one job, its outcome, stop. */
const DRIVER = `
import pg from 'pg';
import { run, enqueue } from ${JSON.stringify('DIST/index.js')};
const [url, task] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: 3 });
try {
  const runner = await run({ pool, connectionString: url, tasks: { hello: task }, log: { level: 'silent' } });
  const outcome = new Promise((resolve) => {
    runner.events.on('job:completed', () => resolve({ done: true }));
    runner.events.on('job:retried', ({ errors }) => resolve({ error: errors[0] }));
    runner.events.on('job:dead', ({ errors }) => resolve({ error: errors[0] }));
  });
  const { id } = await enqueue(pool, 'hello', { name: 'ada' });
  const result = await outcome;
  await runner.stop();
  process.stdout.write(JSON.stringify({ id, ...result }) + '\\n');
} catch (err) {
  process.stdout.write(JSON.stringify({ code: err.code, message: err.message }) + '\\n');
} finally {
  await pool.end();
}
`;

/** A child's environment with no loader flags inherited from this (tsx-run) process. */
function plainEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  delete env.TSX_TSCONFIG_PATH;
  return env;
}

before(async () => {
  db = await createTestDatabase('run_compiled');
  pkg = compilePackage('run');
  withTsx = path.join(pkg.root, 'app');
  writeApp(withTsx);
  withoutTsx = mkdtempSync(path.join(tmpdir(), 'jobvisor-plain-app-'));
  writeApp(withoutTsx);
  writeFileSync(path.join(pkg.root, 'driver.mjs'), DRIVER.replace('DIST', pkg.dist));
});

after(async () => {
  await db.drop();
  pkg.remove();
  rmSync(withoutTsx, { recursive: true, force: true });
});

describe('a .ts task under compiled jobvisor, in plain node', () => {
  it('runs when the app has tsx (registered in the thread, the file imported afresh)', async () => {
    const out = await runProcess(
      process.execPath,
      [path.join(pkg.root, 'driver.mjs'), db.url, path.join(withTsx, 'tasks/hello.ts')],
      { env: plainEnv() },
    );
    assert.equal(out.code, 0, out.stderr);
    const answer = JSON.parse(out.stdout.trim().split('\n').pop() as string);
    assert.equal(answer.done, true, JSON.stringify(answer));
    const row = await db.pool.query('SELECT status, result FROM jobvisor.jobs WHERE id = $1', [answer.id]);
    assert.deepEqual(row.rows[0], { status: 'done', result: { hello: 'ada!' } });
  });

  it('makes run() refuse at start when no TypeScript loader can run it', async () => {
    const out = await runProcess(
      process.execPath,
      [path.join(pkg.root, 'driver.mjs'), db.url, path.join(withoutTsx, 'tasks/hello.ts')],
      { env: plainEnv() },
    );
    const answer = JSON.parse(out.stdout.trim().split('\n').pop() as string);
    assert.equal(answer.code, 'TASK_NO_TS_LOADER', JSON.stringify(answer));
    assert.match(answer.message, /hello\.ts is TypeScript but no TypeScript loader is available: install tsx/);
  });

  it('makes `jobvisor start` exit 2 with one line, claiming nothing', async () => {
    const out = await runProcess(process.execPath, [path.join(pkg.dist, 'cli/bin.js'), 'start'], {
      env: plainEnv({
        DATABASE_URL: db.url,
        JOBVISOR_CONFIG: '',
        NODE_ENV: 'test',
        METRICS_PORT: '0',
        LOG_LEVEL: 'warn',
        JOBVISOR_TASKS_DIR: path.join(withoutTsx, 'tasks'),
      }),
      cwd: withoutTsx,
    });
    assert.equal(out.code, 2, out.stderr);
    const lines = out.stderr.trim().split('\n');
    assert.equal(lines.length, 1, out.stderr);
    assert.match(lines[0] as string, /^jobvisor: task kind "hello": .*no TypeScript loader/);
  });
});
