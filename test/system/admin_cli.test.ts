/**
 * `jobvisor jobs show | run-now | delete` and `jobvisor stats` with
 * supervisors, end to end against a real database; bad input exits 2 and
 * writes nothing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, beforeEach, describe, it } from 'node:test';
import { beatSupervisor } from '../../src/queue/admin/index.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { BIN } from '../helpers/supervisor.ts';
import { insertWorkflow } from '../helpers/workflow.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('admin_cli');
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.supervisors, jobvisor.job_dependencies');
});
after(async () => {
  await db.drop();
});

const cli = (args: string[]) => runCliInProcess(db.url, args);

/** The real binary, once, so the wiring from bin to command is covered too. */
function jobvisor(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, DATABASE_URL: db.url, JOBVISOR_CONFIG: '', NODE_ENV: 'test' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function insert(sql: string): Promise<string[]> {
  return (await db.pool.query<{ id: string }>(`INSERT INTO jobvisor.jobs ${sql} RETURNING id`)).rows.map((r) => r.id);
}

async function snapshot(): Promise<string> {
  const r = await db.pool.query('SELECT id, status, run_at FROM jobvisor.jobs ORDER BY id');
  return JSON.stringify(r.rows);
}

describe('jobs show', () => {
  it('prints the job, its payload and timeline; --json gives every field', async () => {
    const [id] = await insert(
      `(kind, payload, status, attempts, last_error, errors, locked_by, finished_at, started_at)
       VALUES ('thumb', '{"image": 7}', 'failed', 1, 'boom', '[{"attempt":1,"at":"2030-01-01T00:00:00Z","error":"boom"}]',
               'host:1:abc', now(), now())`,
    );
    let r = await jobvisor(['jobs', 'show', id!]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^id\s+\d+$/m);
    assert.match(r.stdout, /^status\s+failed$/m);
    assert.match(r.stdout, /^owner\s+host:1:abc$/m);
    assert.match(r.stdout, /"image": 7/);
    assert.match(r.stdout, /failed \(attempt 1\): boom/);
    r = await cli(['jobs', 'show', id!, '--json']);
    const job = JSON.parse(r.stdout);
    assert.deepEqual([job.id, job.payload, job.errors.length, job.timeline[0].event], [id, { image: 7 }, 1, 'created']);
  });

  it("lists a workflow job's parents and dependents with their statuses, in text and --json", async () => {
    const ids = await insertWorkflow(db.pool, [
      { kind: 'render_page', status: 'done' },
      { kind: 'render_page', status: 'running' },
      { kind: 'render_page', status: 'failed', queue: 'pdf' },
      { kind: 'merge_pdf', parents: [0, 1, 2] },
      { kind: 'email_pdf', parents: [3] },
    ]);
    const [done, running, failed, merge, email] = ids as [string, string, string, string, string];
    let r = await cli(['jobs', 'show', merge]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^status\s+blocked$/m);
    const tail = r.stdout.slice(r.stdout.indexOf('\nparents:') + 1);
    assert.deepEqual(tail.trimEnd().split('\n'), [
      'parents: 3 (1 done, 1 failed, 1 running)',
      `  ${running}  running    render_page  (queue default)`,
      `  ${failed}  failed     render_page  (queue pdf)`,
      `  ${done}  done       render_page  (queue default)`,
      'dependents: 1 (1 blocked)',
      `  ${email}  blocked    email_pdf  (queue default)`,
    ]);
    r = await cli(['jobs', 'show', merge, '--json']);
    const job = JSON.parse(r.stdout);
    assert.equal(job.status, 'blocked');
    assert.deepEqual(
      job.parents.jobs.map((j: { id: string; status: string }) => [j.id, j.status]),
      [
        [running, 'running'],
        [failed, 'failed'],
        [done, 'done'],
      ],
    );
    assert.deepEqual(job.parents.byStatus, { done: 1, running: 1, failed: 1 });
    assert.deepEqual(job.dependents, {
      jobs: [{ id: email, kind: 'email_pdf', queue: 'default', status: 'blocked' }],
      total: 1,
      byStatus: { blocked: 1 },
    });
    // A parent shows its one dependent; a job outside any workflow shows neither list.
    assert.match((await cli(['jobs', 'show', done])).stdout, /^parents: none\ndependents: 1 \(1 blocked\)$/m);
    const [plain] = await insert(`(kind) VALUES ('solo')`);
    assert.doesNotMatch((await cli(['jobs', 'show', plain!])).stdout, /parents|dependents/);
  });

  it('a missing job exits 1; a bad id or a second id exits 2', async () => {
    let r = await cli(['jobs', 'show', '424242']);
    assert.deepEqual([r.code, r.stderr], [1, 'job 424242: not found\n']);
    r = await cli(['jobs', 'show', 'x1']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /job id must be a positive integer/);
    r = await cli(['jobs', 'show', '1', '2']);
    assert.equal(r.code, 2);
  });
});

describe('jobs run-now', () => {
  it('makes future jobs due; an already due job is fine, a done one is not', async () => {
    const [later, due, done] = await insert(
      `(kind, run_at, status) VALUES ('k', now() + interval '1 hour', 'pending'), ('k', now(), 'pending'), ('k', now(), 'done')`,
    );
    let r = await cli(['jobs', 'run-now', later!, due!]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^due now: ${later}$`, 'm'));
    assert.match(r.stdout, new RegExp(`job ${due}: already due`));
    const row = await db.pool.query('SELECT run_at <= now() AS due FROM jobvisor.jobs WHERE id = $1', [later]);
    assert.equal(row.rows[0].due, true);
    r = await cli(['jobs', 'run-now', done!]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`job ${done}: is done; only pending or waiting jobs can be run now`));
  });

  it('bad input exits 2 and changes nothing', async () => {
    const [later] = await insert(`(kind, run_at) VALUES ('k', now() + interval '1 hour')`);
    const before = await snapshot();
    for (const args of [[], [later!, 'abc'], [later!, '--all'], [later!, '-5']]) {
      const r = await cli(['jobs', 'run-now', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.equal(await snapshot(), before);
  });
});

describe('jobs delete', () => {
  it('deletes ids but never a running job, and says why', async () => {
    const [running, done] = await insert(
      `(kind, status, locked_by, locked_until) VALUES ('k', 'running', 'A', now() + interval '1 minute'), ('k', 'done', NULL, NULL)`,
    );
    const r = await cli(['jobs', 'delete', running!, done!, '777777']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, `deleted: ${done}\n`);
    assert.match(
      r.stderr,
      new RegExp(`job ${running}: is running; a running job is never deleted \\(cancel it first\\)`),
    );
    assert.match(r.stderr, /job 777777: not found/);
    assert.deepEqual(
      (await db.pool.query('SELECT id FROM jobvisor.jobs')).rows.map((x: { id: string }) => x.id),
      [running],
    );
  });

  it('--failed [--kind K] [--older-than D] deletes matching dead letters in batches and prints the count', async () => {
    await db.pool.query(`
      INSERT INTO jobvisor.jobs (kind, status, finished_at)
      SELECT 'old', 'failed', now() - interval '8 days' FROM generate_series(1, 1500)
      UNION ALL SELECT 'old', 'failed', now() FROM generate_series(1, 3)
      UNION ALL SELECT 'other', 'failed', now() - interval '8 days' FROM generate_series(1, 2)
      UNION ALL SELECT 'old', 'done', now() - interval '8 days' FROM generate_series(1, 4)`);
    let r = await cli(['jobs', 'delete', '--failed', '--kind', 'old', '--older-than', '7d']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'deleted 1500 failed job(s)\n');
    r = await cli(['jobs', 'delete', '--failed']);
    assert.equal(r.stdout, 'deleted 5 failed job(s)\n');
    const left = await db.pool.query('SELECT status, count(*)::int AS n FROM jobvisor.jobs GROUP BY status');
    assert.deepEqual(left.rows, [{ status: 'done', n: 4 }]);
  });

  it('bad input exits 2 and deletes nothing', async () => {
    await db.pool.query(`INSERT INTO jobvisor.jobs (kind, status) SELECT 'k', 'failed' FROM generate_series(1, 3)`);
    const [id] = (await db.pool.query<{ id: string }>('SELECT min(id)::text AS id FROM jobvisor.jobs')).rows.map(
      (r) => r.id,
    );
    const before = await snapshot();
    const cases: Array<[string[], RegExp]> = [
      [[], /give at least one job id/],
      [['abc'], /job id must be a positive integer/],
      [['--failed', id!], /ids or --failed, not both/],
      [['--failed', '--older-than', 'soon'], /--older-than "soon" is not a duration/],
      [['--failed', '--older-than', '-3d'], /--older-than/],
      [['--failed', '--kind', 'bad kind'], /--kind "bad kind" is not valid/],
      [[id!, '--kind', 'k'], /--kind goes with --failed/],
      [[id!, '--older-than', '7d'], /--older-than goes with --failed/],
      [['--failed', '--status', 'done'], /Unknown option '--status'/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(['jobs', 'delete', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
    }
    assert.equal(await snapshot(), before);
  });
});

describe('stats', () => {
  it('lists the supervisors alive, in the table and in --json', async () => {
    await beatSupervisor(
      { db: db.pool, schema: 'jobvisor' },
      {
        id: 'web-1:42:abc',
        host: 'web-1',
        pid: 42,
        version: '1.2.3',
        queues: { default: 10, cpu: 2 },
        inFlight: 3,
        leaseMs: 15_000,
      },
    );
    let r = await cli(['stats']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /supervisor\s+host\s+pid\s+version\s+queues\s+in flight\s+last heartbeat/);
    assert.match(r.stdout, /web-1:42:abc\s+web-1\s+42\s+1\.2\.3\s+cpu:2 default:10\s+3\s+\d{4}-/);
    r = await cli(['stats', '--json']);
    const s = JSON.parse(r.stdout);
    assert.deepEqual(
      s.supervisors.map((x: { id: string; in_flight: number }) => [x.id, x.in_flight]),
      [['web-1:42:abc', 3]],
    );
    await db.pool.query('TRUNCATE jobvisor.supervisors');
    r = await cli(['stats']);
    assert.match(r.stdout, /supervisors: none alive/);
  });
});
