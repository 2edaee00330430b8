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
 *
 * On a Node.js that strips types itself (22.18+, 23.6+; run this file with
 * `npx tsx test/run.ts --node 24 test/packaging/run_compiled.test.ts`):
 *  - a .ts task runs with no tsx anywhere, by run() and by `jobvisor start`;
 *  - what stripping cannot load (an import of `./x.js` meaning `./x.ts`) goes
 *    to the app's tsx; without tsx (an `enum`) start-up names the reason;
 *  - with stripping turned off (--no-experimental-strip-types) the refusals
 *    above hold as on Node 20.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { runProcess } from '../helpers/cli.ts';
import { compilePackage, type CompiledPackage } from '../helpers/compile.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let pkg: CompiledPackage;
/** An app inside the checkout: its tasks resolve the checkout's tsx, as an app's resolve its own. */
let withTsx: string;
/** An app in the system's temporary folder: no tsx anywhere above it. */
let withoutTsx: string;

/** Whether this Node.js strips types itself (process.features.typescript is 'strip' or 'transform'). */
const STRIPS = Boolean((process.features as { typescript?: unknown }).typescript);
/** Turns Node's type stripping off where it exists, so the no-loader paths can be tested on every Node. */
const NO_STRIPPING = STRIPS ? ['--no-experimental-strip-types'] : [];
const NEEDS_STRIPPING = STRIPS ? false : `Node.js ${process.version} does not strip types`;

function writeApp(dir: string): void {
  mkdirSync(path.join(dir, 'tasks'), { recursive: true });
  mkdirSync(path.join(dir, 'lib'), { recursive: true });
  writeFileSync(path.join(dir, 'lib/name.ts'), "export const who = (p: { name: string }): string => p.name + '!';\n");
  writeFileSync(
    path.join(dir, 'tasks/hello.ts'),
    "import { who } from '../lib/name.ts';\nexport default async (p: { name: string }) => ({ hello: who(p) });\n",
  );
  // What tsc's own resolution writes and type stripping cannot follow: ./name.js for ./name.ts.
  mkdirSync(path.join(dir, 'more'), { recursive: true });
  writeFileSync(
    path.join(dir, 'more/hello.ts'),
    "import { who } from '../lib/name.js';\nexport default async (p: { name: string }) => ({ hello: who(p) });\n",
  );
  // Syntax that stripping does not erase.
  writeFileSync(
    path.join(dir, 'more/enum.ts'),
    'enum Mood { Happy = 1 }\nexport default async () => ({ mood: Mood.Happy });\n',
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

/** The driver's answer for one `hello` job run by `file`, under `node ...execArgv`. */
async function drive(file: string, execArgv: string[] = []): Promise<Record<string, unknown>> {
  const out = await runProcess(process.execPath, [...execArgv, path.join(pkg.root, 'driver.mjs'), db.url, file], {
    env: plainEnv(),
  });
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout.trim().split('\n').pop() as string) as Record<string, unknown>;
}

async function resultOf(id: unknown): Promise<unknown> {
  const row = await db.pool.query('SELECT status, result FROM jobvisor.jobs WHERE id = $1', [id]);
  return row.rows[0];
}

/** `jobvisor start` of the compiled package, its tasks from `tasksDir`, in plain node. */
function startArgs(tasksDir: string, execArgv: string[] = []) {
  return {
    args: [...execArgv, path.join(pkg.dist, 'cli/bin.js'), 'start'],
    options: {
      env: plainEnv({
        DATABASE_URL: db.url,
        JOBVISOR_CONFIG: '',
        NODE_ENV: 'test',
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        JOBVISOR_TASKS_DIR: tasksDir,
      }),
      cwd: path.dirname(tasksDir),
    },
  };
}

describe('a .ts task under compiled jobvisor, in plain node', () => {
  it('runs when the app has tsx (registered in the thread, the file imported afresh)', async () => {
    const answer = await drive(path.join(withTsx, 'tasks/hello.ts'), NO_STRIPPING);
    assert.equal(answer.done, true, JSON.stringify(answer));
    assert.deepEqual(await resultOf(answer.id), { status: 'done', result: { hello: 'ada!' } });
  });

  it('makes run() refuse at start when no TypeScript loader can run it', async () => {
    const answer = await drive(path.join(withoutTsx, 'tasks/hello.ts'), NO_STRIPPING);
    assert.equal(answer.code, 'TASK_NO_TS_LOADER', JSON.stringify(answer));
    assert.match(
      String(answer.message),
      /hello\.ts is TypeScript but no TypeScript loader is available: install tsx in the app, compile it to \.js, or run on Node\.js ≥ 22\.18/,
    );
  });

  it('makes `jobvisor start` exit 2 with one line, claiming nothing', async () => {
    const { args, options } = startArgs(path.join(withoutTsx, 'tasks'), NO_STRIPPING);
    const out = await runProcess(process.execPath, args, { ...options, env: { ...options.env, LOG_LEVEL: 'warn' } });
    assert.equal(out.code, 2, out.stderr);
    const lines = out.stderr.trim().split('\n');
    assert.equal(lines.length, 1, out.stderr);
    assert.match(lines[0] as string, /^jobvisor: task kind "hello": .*no TypeScript loader/);
  });
});

describe('a .ts task on a Node.js that strips types itself', { skip: NEEDS_STRIPPING }, () => {
  it('run() runs it with no tsx anywhere', async () => {
    const answer = await drive(path.join(withoutTsx, 'tasks/hello.ts'));
    assert.equal(answer.done, true, JSON.stringify(answer));
    assert.deepEqual(await resultOf(answer.id), { status: 'done', result: { hello: 'ada!' } });
  });

  it('`jobvisor start` runs it with no tsx anywhere', async () => {
    const { args, options } = startArgs(path.join(withoutTsx, 'tasks'));
    const child = spawn(process.execPath, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await until(
        'the ready line',
        () => out,
        (text) => /"msg":"ready"/.test(text),
        60_000,
      );
      const { id } = await enqueue(db.pool, 'hello', { name: 'grace' });
      await until(
        'the job done',
        () => resultOf(id),
        (r) => (r as { status?: string })?.status === 'done',
        30_000,
      );
      assert.deepEqual(await resultOf(id), { status: 'done', result: { hello: 'grace!' } });
      child.kill('SIGTERM');
      assert.equal(await exited, 0, out);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('what stripping cannot load goes to the app’s tsx: an import of ./name.js meaning ./name.ts, an enum', async () => {
    const viaJs = await drive(path.join(withTsx, 'more/hello.ts'));
    assert.equal(viaJs.done, true, JSON.stringify(viaJs));
    assert.deepEqual(await resultOf(viaJs.id), { status: 'done', result: { hello: 'ada!' } });
    const withEnum = await drive(path.join(withTsx, 'more/enum.ts'));
    assert.equal(withEnum.done, true, JSON.stringify(withEnum));
    assert.deepEqual(await resultOf(withEnum.id), { status: 'done', result: { mood: 1 } });
  });

  it('without tsx, start-up names what stripping could not load', async () => {
    for (const [file, why] of [
      ['more/hello.ts', /Cannot find module .*lib\/name\.js/],
      ['more/enum.ts', /TypeScript enum is not supported in strip-only mode/],
    ] as const) {
      const answer = await drive(path.join(withoutTsx, file));
      assert.equal(answer.code, 'TASK_IMPORT_FAILED', JSON.stringify(answer));
      assert.match(String(answer.message), why);
      assert.match(String(answer.message), /type stripping runs the file as written: erasable syntax only/);
    }
  });
});
