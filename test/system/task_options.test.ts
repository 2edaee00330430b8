/**
 * Task options (`export const options`): checked, discovered from the task
 * folders (a user task replaces a built-in), and used as the queue default of
 * `jobvisor enqueue` when the command names no queue. The library's enqueue()
 * does not read them (test/integration/define_job.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BUILTIN_TASKS_DIR } from '../../src/builtins.ts';
import { discoverTaskOptions, parseTaskOptions } from '../../src/worker/task_options.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/cli.ts';

let db: TestDatabase;
let dir: string;

before(async () => {
  db = await createTestDatabase('task_options');
  dir = await mkdtemp(path.join(tmpdir(), 'jobvisor-task-options-'));
  await writeFile(
    path.join(dir, 'thumbnail.mjs'),
    "export const options = { queue: 'images' };\nexport default async () => {};\n",
  );
  await writeFile(path.join(dir, 'plain.mjs'), 'export default async () => {};\n');
  await writeFile(
    path.join(dir, 'typo.mjs'),
    'export const options = { exclusive: true };\nexport default () => {};\n',
  );
  await writeFile(path.join(dir, 'broken.mjs'), 'export default (;\n');
  await writeFile(path.join(dir, 'notes.txt'), 'not a task');
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
  await db.drop();
});

describe('task options', () => {
  it('checks each key and names the bad one', () => {
    assert.deepEqual(parseTaskOptions('t.js', { exclusiveThread: true, queue: 'cpu', timeout: '10m' }), {
      exclusiveThread: true,
      queue: 'cpu',
      timeoutMs: 600_000,
    });
    assert.deepEqual(parseTaskOptions('t.js', {}), { exclusiveThread: false });
    assert.throws(() => parseTaskOptions('t.js', { exclusive: true }), /unknown key "exclusive"/);
    assert.throws(() => parseTaskOptions('t.js', { exclusiveThread: 'yes' }), /exclusiveThread must be true or false/);
    assert.throws(() => parseTaskOptions('t.js', { queue: 'a b' }), /options\.queue "a b" is not valid/);
    assert.throws(() => parseTaskOptions('t.js', { timeout: 'soon' }), /options\.timeout "soon" is not a duration/);
    assert.throws(() => parseTaskOptions('t.js', { timeout: 0 }), /more than 0/);
    assert.throws(() => parseTaskOptions('t.js', ['cpu']), /must be an object/);
  });

  it('discovers every task of the folders; the first folder wins; bad modules are reported, not fatal', async () => {
    const problems: string[] = [];
    const found = await discoverTaskOptions([dir, BUILTIN_TASKS_DIR], (p) => problems.push(p));
    assert.deepEqual(
      found.get('thumbnail'),
      { exclusiveThread: false, queue: 'images' },
      'user task replaces built-in',
    );
    assert.deepEqual(found.get('daily_report'), { exclusiveThread: true, queue: 'cpu', timeoutMs: 600_000 });
    assert.equal(found.has('plain'), false);
    assert.equal(found.has('welcome_email'), false);
    assert.equal(found.has('typo'), false);
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems.join('\n'), /typo\.mjs.*unknown key "exclusive"/);
    assert.match(problems.join('\n'), /broken\.mjs could not be loaded/);
  });

  it('jobvisor enqueue reads the task options for its default queue, if config serves it', async () => {
    // A real process: importing the task takes long enough that an in-process run
    // would capture the test runner's own output.
    const run = (args: string[], env: Record<string, string> = {}) => runCli(db.url, args, env);
    const payload = '{"source":"/x.jpg","widths":[10]}';
    const builtIn = await run(['enqueue', 'thumbnail', payload]);
    assert.equal(builtIn.code, 0, builtIn.stderr);
    const explicit = await run(['enqueue', 'thumbnail', payload, '--queue', 'default']);
    // The user's thumbnail asks for "images", which config/default.json does not list.
    const unserved = await run(['enqueue', 'thumbnail', payload], { JOBVISOR_TASKS_DIR: dir });
    assert.match(unserved.stderr, /asks for queue "images", which config queues does not list; using "default"/);
    const queueOf = async (r: { stdout: string }) =>
      (await db.pool.query('SELECT queue FROM jobvisor.jobs WHERE id = $1', [r.stdout.trim()])).rows[0].queue;
    assert.deepEqual(await Promise.all([builtIn, explicit, unserved].map(queueOf)), ['cpu', 'default', 'default']);
  });
});
