/**
 * The jobvisor command as a user runs it: real processes, real database.
 * Bad input exits 2 with one line naming the problem and writes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCliInProcess, type CliRun as Run } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { writeConfig } from '../helpers/supervisor.ts';
import { runCli } from '../helpers/cli.ts';

let db: TestDatabase;

function jobvisor(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return runCli(db.url, args, env);
}

const jobvisorInProcess = (args: string[], env: Record<string, string> = {}) => runCliInProcess(db.url, args, env);

const count = async () => (await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.jobs')).rows[0].n as number;

before(async () => {
  db = await createTestDatabase('cli');
});
after(async () => {
  await db.drop();
});

describe('jobvisor CLI', () => {
  it('enqueue prints the new job id and applies every option', async () => {
    const r = await jobvisor([
      'enqueue',
      'welcome_email',
      '{"user_id":7}',
      '--queue',
      'emails',
      '--priority',
      '-3',
      '--delay',
      '10s',
      '--max-attempts',
      '4',
      '--unique-key',
      'welcome-7',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\d+\n$/);
    const row = (await db.pool.query('SELECT * FROM jobvisor.jobs WHERE id = $1', [r.stdout.trim()])).rows[0];
    assert.deepEqual(
      [row.kind, row.payload, row.queue, row.priority, row.max_attempts, row.unique_key],
      ['welcome_email', { user_id: 7 }, 'emails', -3, 4, 'welcome-7'],
    );
    assert.ok(row.run_at.getTime() > Date.now() + 5000);
    const dup = await jobvisorInProcess(['enqueue', 'welcome_email', '{"user_id":7}', '--unique-key', 'welcome-7']);
    assert.equal(dup.code, 0);
    assert.equal(dup.stdout.trim(), r.stdout.trim(), 'the existing id');
    assert.match(dup.stderr, /skipped/);
    const at = await jobvisorInProcess(['enqueue', 'report', '--run-at', '2031-01-01T00:00:00Z', '--json']);
    assert.equal(at.code, 0, at.stderr);
    assert.equal(JSON.parse(at.stdout).duplicate, false);
  });

  it('bad input exits 2 with one line naming the problem, and writes nothing', async () => {
    const before = await count();
    const cases: Array<[string[], RegExp]> = [
      [['enqueue'], /missing KIND/],
      [['enqueue', 'k', '{not json'], /not valid JSON/],
      [['enqueue', 'k', '{}', '--priority', 'high'], /--priority must be an integer/],
      [['enqueue', 'k', '{}', '--max-attempts', '0'], /--max-attempts must be from 1/],
      [['enqueue', 'k', '{}', '--delay', 'soon'], /delay "soon" is not a duration/],
      [['enqueue', 'k', '{}', '--run-at', 'next tuesday'], /--run-at .* is not an ISO 8601/],
      [['enqueue', 'k', '{}', '--run-at', '2030-01-01T00:00:00Z', '--delay', '5s'], /not both/],
      [['enqueue', 'k', '{}', '--bogus'], /Unknown option '--bogus'/],
      [['enqueue', 'bad kind!', '{}'], /kind "bad kind!" is not valid/],
      [['enqueue', 'k', '{"s":"\\u0000"}'], /NUL character/],
      [['enqueue', 'k', '{"user":{"tags":["a","\\ud800"]}}'], /payload\.user\.tags\[1\] contains invalid UTF-16/],
      [['enqueue', 'k', '{}', 'extra'], /unexpected argument/],
      [['jobs', 'list', '--status', 'weird'], /--status must be one of/],
      [['jobs', 'list', '--limit', '-1'], /--limit must be from 1/],
      [['jobs', 'retry', 'abc'], /job id must be a positive integer/],
      [['jobs', 'retry'], /at least one job id/],
      [['jobs', 'cancel', '1', '0'], /job id must be a positive integer/],
      [['jobs', 'explode'], /unknown subcommand/],
      [['frobnicate'], /unknown command/],
      [['stats', '--verbose'], /Unknown option/],
      // A command that takes no arguments refuses a stray one instead of running.
      [['migrate', 'now'], /migrate: unexpected argument "now"/],
      [['start', 'default'], /start: unexpected argument "default"/],
      [['demo', 'x'], /demo: unexpected argument "x"/],
      [['dashboard', '9465'], /dashboard: unexpected argument "9465"/],
      [['stats', 'default'], /stats: unexpected argument "default"/],
      [['queues', 'list', 'x'], /queues list: unexpected argument "x"/],
    ];
    for (const [args, message] of cases) {
      const r = await jobvisorInProcess(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line for ${args.join(' ')}: ${r.stderr}`);
    }
    assert.equal(await count(), before, 'nothing was written');
  });

  it('a config file with an unknown or mistyped key stops start-up naming the key', async () => {
    const typo = writeConfig({ queues: { default: { concurency: 5 } } });
    let r = await jobvisor(['start'], { JOBVISOR_CONFIG: typo });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /queues\.default\.concurency.*did you mean "queues\.default\.concurrency"/);
    r = await jobvisorInProcess(['stats'], { JOBVISOR_CONFIG: writeConfig({ shutdown: { grase: '5s' } }) });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown key "shutdown\.grase".*"shutdown\.grace"/);
    r = await jobvisorInProcess(['stats'], { JOBVISOR_CONFIG: writeConfig({ jobs: { lease: 'forever' } }) });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /jobs\.lease/);
    r = await jobvisorInProcess(['stats'], { DATABASE_URL: '', NODE_ENV: 'production' });
    assert.equal(r.code, 2, 'production never falls back to the embedded server');
    assert.match(r.stderr, /DATABASE_URL .* is required when NODE_ENV=production/);
    r = await jobvisorInProcess(['stats'], { METRICS_PORT: 'nine' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /metrics\.port/);
  });

  it('stats, jobs list, retry and cancel', async () => {
    await db.pool.query(
      "INSERT INTO jobvisor.jobs (kind, status, finished_at, last_error) VALUES ('broken', 'failed', now(), 'Error: nope')",
    );
    const failedId = (await db.pool.query("SELECT id FROM jobvisor.jobs WHERE kind = 'broken'")).rows[0].id as string;
    let r = await jobvisor(['stats', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const stats = JSON.parse(r.stdout);
    assert.ok(
      stats.counts.some(
        (c: { kind: string; status: string; count: number }) =>
          c.kind === 'broken' && c.status === 'failed' && c.count === 1,
      ),
    );
    r = await jobvisorInProcess(['stats']);
    assert.match(r.stdout, /queue\s+kind\s+status\s+count/);
    assert.match(r.stdout, /oldest pending/);
    r = await jobvisorInProcess(['jobs', 'list', '--status', 'failed', '--json']);
    assert.equal(JSON.parse(r.stdout.trim().split('\n')[0] as string).id, failedId);
    r = await jobvisorInProcess(['jobs', 'list', '--kind', 'broken']);
    assert.match(r.stdout, /broken\s+failed/);
    await db.pool.query(
      "INSERT INTO jobvisor.jobs (kind, run_at) VALUES ('later_cli', now() + interval '1 day'), ('later_cli', now() - interval '1 minute')",
    );
    r = await jobvisorInProcess(['jobs', 'list', '--status', 'scheduled', '--kind', 'later_cli', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim().split('\n').length, 1, 'only the job not yet due');
    r = await jobvisor(['jobs', 'retry', failedId, '999999']);
    assert.equal(r.code, 1, 'one id could not be retried');
    assert.match(r.stdout, new RegExp(`retried: ${failedId}`));
    assert.match(r.stderr, /job 999999: not found/);
    assert.equal(
      (await db.pool.query('SELECT status, attempts FROM jobvisor.jobs WHERE id = $1', [failedId])).rows[0].status,
      'pending',
    );
    r = await jobvisorInProcess(['jobs', 'cancel', failedId]);
    assert.equal(r.code, 0, r.stderr);
    r = await jobvisorInProcess(['jobs', 'retry', '--failed', '--kind', 'broken']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /retried 0 failed job/);
  });

  it('migrate run by several processes at once is safe and idempotent', async () => {
    const fresh = await createTestDatabase('cli_migrate');
    try {
      await fresh.pool.query('DROP SCHEMA jobvisor CASCADE');
      const runs = await Promise.all([1, 2, 3, 4].map(() => jobvisor(['migrate'], { DATABASE_URL: fresh.url })));
      for (const r of runs) assert.equal(r.code, 0, r.stderr);
      assert.equal(
        runs.filter((r) => /applied/.test(r.stdout)).length,
        1,
        'exactly one process applied the migrations',
      );
      assert.equal(runs.filter((r) => /up to date/.test(r.stdout)).length, 3);
      const versions = (await fresh.pool.query('SELECT version FROM jobvisor.migrations')).rows;
      assert.equal(versions.length, new Set(versions.map((v) => v.version)).size);
    } finally {
      await fresh.drop();
    }
  });

  it('the demo runs the welcome_email practice to 20/20 and exits 0', async () => {
    const r = await jobvisor(['demo'], { DATABASE_URL: db.url });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /welcome emails sent:\s+20\/20/);
    assert.match(r.stdout, /jobs done:\s+23\/23/);
    assert.match(r.stdout, /sends skipped as duplicates: 3/);
  });
});
