/**
 * jobvisor's built-in tasks (welcome_email, thumbnail, daily_report) are
 * opt-in. An app's worker runs the tasks it registers and nothing else: a job
 * of a kind it did not register fails with TaskLoadError (retried, then dead
 * letter) and is never run by a built-in; nothing warns about built-ins it
 * never asked for; `jobvisor start` outside jobvisor's repository brings no
 * `cpu` queue and no schedule. The repository's own config/demo.json (not in
 * the npm package) keeps its demo, `npm start` and the image as they were.
 * Real PostgreSQL, real worker threads and a real `jobvisor start`.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { BUILTIN_TASKS_DIR } from '../../src/builtins.ts';
import { loadConfig } from '../../src/config/index.ts';
import { builtinTask, ConfigError, enqueue, run, type Runner } from '../../src/index.ts';
import { PACKAGE_ROOT } from '../../src/paths.ts';
import { findTaskFile, loadTask, TaskLoadError } from '../../src/worker/loader.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
let app: string;

before(async () => {
  db = await createTestDatabase('builtins');
  app = mkdtempSync(path.join(tmpdir(), 'jobvisor-builtins-app-'));
  writeFileSync(path.join(app, 'greet.mjs'), 'export default async (p) => ({ text: `hello ${p.name}` });\n');
  // The app's own welcome_email, which replaces the built-in where both are asked for.
  writeFileSync(path.join(app, 'welcome_email.mjs'), 'export default async () => ({ mine: true });\n');
});

after(async () => {
  await db.drop();
  rmSync(app, { recursive: true, force: true });
});

/** A pino logger whose lines are kept, parsed. */
function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, stream) };
}

const statusOf = async (id: string) =>
  (
    await db.pool.query<{ status: string; attempts: number; last_error: string | null; result: unknown }>(
      'SELECT status, attempts, last_error, result FROM jobvisor.jobs WHERE id = $1',
      [id],
    )
  ).rows[0];

describe('built-in tasks are opt-in', () => {
  it('run() with the app tasks only: welcome_email and thumbnail jobs fail with TaskLoadError, never run by a built-in', async () => {
    const { lines, logger } = capturedLogger();
    const runner: Runner = await run({
      connectionString: db.url,
      tasks: { greet: path.join(app, 'greet.mjs') },
      queues: { default: { concurrency: 4 } },
      backoff: { base: '100ms', max: '200ms' },
      logger,
    });
    try {
      const served = lines.find((l) => l.msg === 'serving task kinds');
      assert.deepEqual(served?.kinds, ['greet'], 'one line at start names the kinds served');
      const greet = (await enqueue(db.pool, 'greet', { name: 'Ada' })).id;
      const welcome = (await enqueue(db.pool, 'welcome_email', { user_id: 1 }, { maxAttempts: 2 })).id;
      const thumb = (await enqueue(db.pool, 'thumbnail', { source: 'a.jpg', widths: [8] }, { maxAttempts: 2 })).id;
      const ended = await until(
        'the jobs end',
        async () => Promise.all([greet, welcome, thumb].map(statusOf)),
        (rows) => rows.every((r) => r?.status === 'done' || r?.status === 'failed'),
        30_000,
      );
      // Its thumbnail job had the old supervisor read the built-in: "task thumbnail asks for queue "cpu", …".
      const aboutBuiltins = lines.filter((l) => /asks for queue|thumbnail|daily_report/.test(String(l.msg)));
      assert.deepEqual(aboutBuiltins, [], 'no warning about built-in tasks the app never asked for');
      assert.equal(ended[0]?.status, 'done');
      for (const [kind, row] of [
        ['welcome_email', ended[1]],
        ['thumbnail', ended[2]],
      ] as const) {
        assert.equal(row?.status, 'failed', `${kind}: dead letter after its attempts`);
        assert.equal(row?.attempts, 2, `${kind}: retried as any failure`);
        assert.match(
          row?.last_error ?? '',
          new RegExp(
            `^TaskLoadError: no task for kind "${kind}" \\(looked in the tasks map\\); ${kind} is one of jobvisor's built-in tasks, which run only where enabled`,
          ),
        );
      }
      const table = await db.pool.query("SELECT to_regclass('public.emails_sent') AS t");
      assert.equal(table.rows[0]?.t, null, 'the built-in welcome_email never ran');
    } finally {
      await runner.stop();
    }
  });

  it('an app that maps builtinTask("welcome_email") runs the built-in', async () => {
    const runner = await run({
      connectionString: db.url,
      tasks: { welcome_email: builtinTask('welcome_email') },
      log: { level: 'silent' },
    });
    try {
      const id = (await enqueue(db.pool, 'welcome_email', { user_id: 42 })).id;
      const row = await until(
        'the welcome_email job done',
        () => statusOf(id),
        (r) => r?.status === 'done',
        30_000,
      );
      assert.deepEqual(row?.result, { sent: true });
      const sent = await db.pool.query('SELECT job_id::text FROM public.emails_sent WHERE user_id = 42');
      assert.deepEqual(sent.rows, [{ job_id: id }]);
    } finally {
      await runner.stop();
    }
    assert.throws(
      () => builtinTask('welcom_email' as 'welcome_email'),
      (err: Error) => err instanceof ConfigError && /did you mean "welcome_email"/.test(err.message),
    );
  });

  it('looks up the tasks map, then tasks.dir, then the built-ins enabled: an app task replaces a built-in', async () => {
    const builtins = { welcome_email: builtinTask('welcome_email'), thumbnail: builtinTask('thumbnail') };
    assert.equal(
      findTaskFile({ files: {}, dirs: [app], builtins }, 'welcome_email'),
      path.join(app, 'welcome_email.mjs'),
    );
    assert.equal(findTaskFile({ files: {}, dirs: [app], builtins }, 'thumbnail'), builtins.thumbnail);
    assert.equal(path.dirname(builtins.thumbnail), BUILTIN_TASKS_DIR);
    assert.equal(findTaskFile({ files: {}, dirs: [app] }, 'thumbnail'), undefined, 'not enabled: not found');
    await assert.rejects(
      loadTask({ files: {}, dirs: [] }, 'daily_report'),
      (err: Error) =>
        err instanceof TaskLoadError &&
        err.reason === 'missing' &&
        err.message.startsWith('no task for kind "daily_report" (this supervisor has no tasks); daily_report is one'),
    );
  });

  it('the package ships no queue, schedule or built-in: only the repository enables its demo', () => {
    const files = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { files: string[] })
      .files;
    assert.ok(!files.includes('config/demo.json') && !files.includes('config'), 'config/demo.json is not shipped');
    // An installed package's config folder: the files `files` ships.
    const shipped = mkdtempSync(path.join(tmpdir(), 'jobvisor-shipped-config-'));
    for (const f of files.filter((name) => name.startsWith('config/')))
      copyFileSync(path.join(PACKAGE_ROOT, f), path.join(shipped, path.basename(f)));
    for (const NODE_ENV of [undefined, 'production']) {
      const settings = loadConfig({ configDir: shipped, env: NODE_ENV ? { NODE_ENV } : {}, cwd: app });
      assert.deepEqual(Object.keys(settings.queues), ['default'], `NODE_ENV=${NODE_ENV}: no cpu queue`);
      assert.deepEqual(settings.schedules, [], `NODE_ENV=${NODE_ENV}: no schedule`);
      assert.deepEqual(settings.tasks.builtins, [], `NODE_ENV=${NODE_ENV}: no built-in task`);
    }
    rmSync(shipped, { recursive: true, force: true });
    // The repository (and its image, which copies config/): the demo as before.
    const checkout = loadConfig({ env: {}, cwd: app });
    assert.deepEqual(checkout.tasks.builtins, ['daily_report', 'thumbnail', 'welcome_email']);
    assert.deepEqual(checkout.queues.cpu?.jobsPerThread, 1);
    assert.deepEqual(
      checkout.schedules.map((s) => [s.name, s.cron, s.kind, s.queue]),
      [['daily_report', '0 2 * * *', 'daily_report', 'cpu']],
    );
    // JOBVISOR_BUILTIN_TASKS (comma-separated) enables some; a mistyped one is refused, naming the nearest.
    const env = { JOBVISOR_BUILTIN_TASKS: 'thumbnail, welcome_email' };
    assert.deepEqual(loadConfig({ configDir: app, env, cwd: app }).tasks.builtins, ['thumbnail', 'welcome_email']);
    assert.throws(
      () => loadConfig({ configDir: app, env: { JOBVISOR_BUILTIN_TASKS: 'thumbnial' }, cwd: app }),
      /tasks\.builtins: "thumbnial" is not a built-in task \(did you mean "thumbnail"\?\)/,
    );
  });

  it('jobvisor start says in one line which kinds it serves', async () => {
    const s = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: { tasks: { builtins: ['welcome_email'] }, queues: { default: {} } },
    });
    try {
      const line = await s.waitForLog(/^serving task kinds$/);
      const kinds = line.kinds as string[];
      assert.ok(kinds.includes('record') && kinds.includes('welcome_email'), JSON.stringify(kinds));
      assert.ok(!kinds.includes('thumbnail'), 'a built-in not enabled is not served');
      assert.equal(s.logs.filter((l) => l.msg === 'serving task kinds').length, 1);
    } finally {
      await s.stop();
    }
  });
});
