/**
 * Every command on a database that `jobvisor migrate` has not prepared says to
 * run it (NotMigratedError, code SCHEMA_NOT_MIGRATED), as `enqueue` does
 * (test/system/enqueue_unmigrated.test.ts): `stats`, each `jobs` and `queues`
 * subcommand, and the dashboard's pages and actions, instead of pg's
 * `relation "jobvisor.jobs" does not exist (42P01)`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCli, runCliInProcess } from '../helpers/cli.ts';
import { serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';
import { createEmptyDatabase, type TestDatabase } from '../helpers/db.ts';

const HINT =
  /^jobvisor: jobvisor's tables are missing or out of date in schema "jobvisor" of this database: run `jobvisor migrate` \(or migrate\(\) from the API\) first \(SCHEMA_NOT_MIGRATED\)$/;

/** Each command a user may run before migrating (enqueue has its own test). */
const COMMANDS = [
  ['stats'],
  ['stats', '--json', '--all'],
  ['jobs', 'list'],
  ['jobs', 'list', '--status', 'failed', '--json'],
  ['jobs', 'show', '1'],
  ['jobs', 'retry', '1'],
  ['jobs', 'retry', '--failed'],
  ['jobs', 'cancel', '1'],
  ['jobs', 'run-now', '1'],
  ['jobs', 'delete', '1'],
  ['jobs', 'delete', '--failed'],
  ['queues', 'list'],
  ['queues', 'pause', 'default'],
  ['queues', 'resume', 'default'],
];

let db: TestDatabase;
let dashboard: ServedDashboard;

before(async () => {
  db = await createEmptyDatabase();
  // A schedule, so that /schedules reads its last fire from the database.
  const schedules = [
    { name: 'nightly', cron: '0 2 * * *', kind: 'report', payload: {}, queue: 'default', priority: 0, timezone: null },
  ];
  dashboard = await serveTestDashboard({ pool: db.pool, schedules });
});

after(async () => {
  await dashboard.close();
  await db.drop();
});

describe('the command line before jobvisor migrate', () => {
  for (const args of COMMANDS)
    it(`jobvisor ${args.join(' ')} says to run jobvisor migrate, in one line, exit 1`, async () => {
      const r = await runCliInProcess(db.url, args);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '');
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0] as string, HINT);
    });

  it('the same from a process of its own', async () => {
    const r = await runCli(db.url, ['jobs', 'list']);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr.trim(), HINT);
  });
});

describe('the dashboard before jobvisor migrate', () => {
  const auth = { authorization: `Bearer ${TEST_TOKEN}` };
  for (const [method, page] of [
    ['GET', '/'],
    ['GET', '/jobs'],
    ['GET', '/jobs?status=failed&q=x'],
    ['GET', '/jobs/1'],
    ['GET', '/jobs/1/workflow'],
    ['GET', '/dead-letters'],
    ['GET', '/schedules'],
    ['GET', '/queues/default'],
    ['POST', '/jobs/1/retry'],
    ['POST', '/queues/default/pause'],
  ] as const)
    it(`${method} ${page} answers 503 saying to run jobvisor migrate`, async () => {
      const res = await fetch(new URL(page.slice(1), dashboard.url), {
        method,
        headers: { ...auth, origin: dashboard.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: method === 'POST' ? '' : undefined,
        redirect: 'manual',
      });
      const body = await res.text();
      assert.equal(res.status, 503, body.slice(0, 500));
      assert.match(body, /<h1>Not migrated<\/h1>/);
      assert.match(body, /run `jobvisor migrate` \(or migrate\(\) from the API\) first/);
      assert.doesNotMatch(body, /does not exist/);
    });
});
