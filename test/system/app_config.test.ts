/**
 * jobvisor run from an app's folder: the app's config file is looked up in
 * the working directory (JOBVISOR_CONFIG, else jobvisor.config.json, else
 * config/jobvisor.json), the app's config/default.json is said to be unread,
 * `start` stops at once on tasks that cannot run, and `enqueue` warns about a
 * kind no tasks folder has.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig, unreadConfigFiles } from '../../src/config/index.ts';
import { runProcess, type CliRun } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { BIN } from '../helpers/supervisor.ts';

let db: TestDatabase;
let work: string;

/** A fresh app folder holding `files` (path → content). */
function appWith(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(work, 'app-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

function jobvisor(cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runProcess(process.execPath, [BIN, ...args], {
    cwd,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      JOBVISOR_CONFIG: '',
      JOBVISOR_TASKS_DIR: '',
      NODE_ENV: 'test',
      METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
  });
}

before(async () => {
  db = await createTestDatabase('app_config');
  work = mkdtempSync(path.join(tmpdir(), 'jobvisor-app-config-'));
});

after(async () => {
  await db.drop();
  rmSync(work, { recursive: true, force: true });
});

describe("the app's config file", () => {
  const mail = JSON.stringify({ queues: { mail: { concurrency: 3 } } });
  const env = { NODE_ENV: 'test' };

  it('is ./jobvisor.config.json, else ./config/jobvisor.json, unless JOBVISOR_CONFIG names one', () => {
    const top = appWith({ 'jobvisor.config.json': mail });
    assert.equal(loadConfig({ env, cwd: top }).queues.mail?.concurrency, 3);
    const nested = appWith({ 'config/jobvisor.json': mail });
    assert.equal(loadConfig({ env, cwd: nested }).queues.mail?.concurrency, 3);
    const both = appWith({
      'jobvisor.config.json': mail,
      'config/jobvisor.json': JSON.stringify({ queues: { other: {} } }),
    });
    assert.deepEqual(Object.keys(loadConfig({ env, cwd: both }).queues).sort(), ['cpu', 'default', 'mail']);
    const named = path.join(work, 'named.json');
    writeFileSync(named, JSON.stringify({ queues: { named: {} } }));
    assert.ok(!('mail' in loadConfig({ env: { ...env, JOBVISOR_CONFIG: named }, cwd: top }).queues));
    assert.ok('named' in loadConfig({ env: { ...env, JOBVISOR_CONFIG: named }, cwd: top }).queues);
    // The app's config/default.json is not read, and said so.
    const nodeConfig = appWith({ 'config/default.json': mail });
    assert.ok(!('mail' in loadConfig({ env, cwd: nodeConfig }).queues));
    assert.deepEqual(unreadConfigFiles(env, nodeConfig), [path.join(nodeConfig, 'config/default.json')]);
  });

  it('stops `jobvisor start` with exit 2 when invalid, naming the key and the file', async () => {
    const app = appWith({ 'jobvisor.config.json': JSON.stringify({ shutdown: { grase: '5s' } }) });
    const out = await jobvisor(app, ['start']);
    assert.equal(out.code, 2, out.stderr);
    assert.match(out.stderr, /^jobvisor: .*unknown key "shutdown.grase" \(did you mean "shutdown.grace"\?\)/);
    const broken = appWith({ 'config/jobvisor.json': '{ "queues": ' });
    const bad = await jobvisor(broken, ['start']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /config\/jobvisor\.json is not valid JSON/);
  });

  it('stops `jobvisor start` with exit 2 when JOBVISOR_CONFIG names a missing file', async () => {
    const out = await jobvisor(work, ['start'], { JOBVISOR_CONFIG: path.join(work, 'missing.json') });
    assert.equal(out.code, 2, out.stderr);
    assert.match(out.stderr, /^jobvisor: JOBVISOR_CONFIG names .*missing\.json, which does not exist\n$/);
  });
});

describe('jobvisor start in an app', () => {
  it("warns that the app's config/default.json is not read, and stops at once on a missing tasks folder", async () => {
    const app = appWith({ 'config/default.json': '{}' });
    const out = await jobvisor(app, ['start'], { JOBVISOR_TASKS_DIR: path.join(app, 'tasks') });
    assert.equal(out.code, 2, out.stderr);
    const warning = out.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; file?: string })
      .find((l) => l.msg.startsWith('this file is not read'));
    assert.equal(warning?.file, path.join(app, 'config/default.json'));
    assert.match(warning.msg, /JOBVISOR_CONFIG, else \.\/jobvisor\.config\.json, else \.\/config\/jobvisor\.json/);
    assert.match(
      out.stderr,
      /^jobvisor: the tasks folder .*tasks \(tasks.dir \/ JOBVISOR_TASKS_DIR\) does not exist\n$/,
    );
  });

  it('exits 1 with one line naming a task module that throws at import', async () => {
    const app = appWith({
      'tasks/ok.mjs': 'export default async () => 1;\n',
      'tasks/invoice.mjs': "throw new Error('STRIPE_KEY is not set');\n",
    });
    const out = await jobvisor(app, ['start'], { JOBVISOR_TASKS_DIR: path.join(app, 'tasks') });
    assert.equal(out.code, 1, out.stderr);
    assert.match(
      out.stderr,
      /^jobvisor: task kind "invoice": task .*invoice\.mjs could not be loaded: STRIPE_KEY is not set \(TASK_IMPORT_FAILED\)\n$/,
    );
    const jobs = await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.supervisors');
    assert.equal(jobs.rows[0].n, 0, 'no supervisor registered');
  });
});

describe('jobvisor enqueue', () => {
  it('enqueues a kind no tasks folder has, with a warning on stderr', async () => {
    const out = await jobvisor(work, ['enqueue', 'send_invoce', '{"id":1}']);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^\d+\n$/);
    assert.match(out.stderr, /^warning: no task for kind "send_invoce" in .*: enqueued anyway/);
    const known = await jobvisor(work, ['enqueue', 'welcome_email', '{"user_id":1}']);
    assert.equal(known.code, 0, known.stderr);
    assert.equal(known.stderr, '');
  });
});
