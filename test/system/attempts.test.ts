/**
 * Every attempt of a job: the completer records each failed attempt's start
 * and owner beside its end, error and stack (migration 016), attemptsOf turns
 * the row into one line per attempt, and the job page shows them, stacks folded.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { attemptsOf, getJob, type JobDetail } from '../../src/queue/admin/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, type ServedDashboard } from '../helpers/dashboard.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';

const T = (s: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, s));

function job(over: Partial<Omit<JobDetail, 'timeline'>>): Omit<JobDetail, 'timeline'> {
  return {
    id: '1',
    queue: 'default',
    kind: 'k',
    status: 'pending',
    priority: 0,
    attempts: 0,
    max_attempts: 3,
    run_at: T(0),
    created_at: T(0),
    started_at: null,
    finished_at: null,
    locked_by: null,
    unique_key: null,
    last_error: null,
    payload: {},
    result: null,
    progress: null,
    snoozes: 0,
    errors: [],
    locked_until: null,
    lease_token: null,
    trace_context: null,
    ...over,
  };
}

describe('attemptsOf', () => {
  it('lists failed attempts from the history and the latest from the row', () => {
    const a = attemptsOf(
      job({
        status: 'done',
        attempts: 3,
        started_at: T(20),
        finished_at: T(21),
        locked_by: 'h:3',
        errors: [
          { attempt: 1, at: T(2).toISOString(), error: 'e1', started: T(1).toISOString(), owner: 'h:1', stack: 'at a' },
          { attempt: 2, at: T(12).toISOString(), error: 'e2' }, // written before migration 016
          { attempt: 2, at: T(13).toISOString(), snooze: true, until: T(14).toISOString() },
        ],
      }),
    );
    assert.deepEqual(
      a.map((x) => [x.attempt, x.outcome, x.started, x.ended, x.durationMs, x.owner, x.error, x.stack]),
      [
        [1, 'failed', T(1), T(2), 1000, 'h:1', 'e1', 'at a'],
        [2, 'failed', null, T(12), null, null, 'e2', null],
        [3, 'done', T(20), T(21), 1000, 'h:3', null, null],
      ],
    );
  });

  it('fills a dead letter’s last entry from the row, and shows a running attempt without an end', () => {
    const dead = attemptsOf(
      job({
        status: 'failed',
        attempts: 1,
        started_at: T(5),
        finished_at: T(8),
        locked_by: 'h:9',
        errors: [{ attempt: 1, at: T(8).toISOString(), error: 'boom' }],
      }),
    );
    assert.deepEqual(dead, [
      {
        attempt: 1,
        started: T(5),
        ended: T(8),
        durationMs: 3000,
        owner: 'h:9',
        outcome: 'failed',
        error: 'boom',
        stack: null,
      },
    ]);
    const running = attemptsOf(job({ status: 'running', attempts: 1, started_at: T(5), locked_by: 'h:9' }));
    assert.deepEqual(
      running.map((x) => [x.outcome, x.ended, x.durationMs]),
      [['running', null, null]],
    );
    assert.deepEqual(attemptsOf(job({})), [], 'never started');
  });
});

describe('attempts recorded by a real supervisor', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let tasksDir: string;
  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool, auth: false });
    tasksDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-attempts-'));
    writeFileSync(path.join(tasksDir, 'package.json'), '{"type": "module"}\n');
    writeFileSync(
      path.join(tasksDir, 'flaky.js'),
      'export default async (p, ctx) => { if (ctx.job.attempt < 3) throw new Error(`flaky ${ctx.job.attempt}`); return { ok: true }; };\n',
    );
  });
  after(async () => {
    await d?.close();
    await t?.drop();
    rmSync(tasksDir, { recursive: true, force: true });
  });

  it('keeps each failed attempt’s start and owner, and the job page shows all three attempts', async () => {
    const supervisor = await spawnSupervisor({
      databaseUrl: t.url,
      tasksDir,
      config: { queues: { default: {} }, backoff: { base: '10ms', max: '50ms', jitter: 0 } },
    });
    try {
      const { rows } = await t.pool.query<{ id: string }>(
        `INSERT INTO jobvisor.jobs (kind) VALUES ('flaky') RETURNING id`,
      );
      const id = rows[0]?.id as string;
      const store = { db: t.pool, schema: 'jobvisor' };
      const done = await until(
        'the flaky job is done on its third attempt',
        () => getJob(store, id),
        (j) => j?.status === 'done',
        30_000,
      );
      assert.ok(done);
      const attempts = attemptsOf(done);
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.outcome, a.error]),
        [
          [1, 'failed', 'Error: flaky 1'],
          [2, 'failed', 'Error: flaky 2'],
          [3, 'done', null],
        ],
      );
      for (const a of attempts) {
        assert.ok(a.started instanceof Date && a.ended instanceof Date, `attempt ${a.attempt} has a start and an end`);
        assert.ok((a.durationMs ?? -1) >= 0);
        assert.match(a.owner ?? '', new RegExp(`:${supervisor.pid}:`), `attempt ${a.attempt} names its supervisor`);
      }
      const html = await (await fetch(`${d.url}jobs/${id}`)).text();
      const table = /<table id="attempts"[\s\S]*?<\/table>/.exec(html)?.[0] ?? '';
      assert.equal(table.match(/<tr>/g)?.length, 4, 'a header and three attempts');
      assert.match(table, /flaky 1[\s\S]*flaky 2/);
      assert.match(html, /<pre id="result">[^<]*&quot;ok&quot;: true/);
    } finally {
      await supervisor.stop();
    }
  });
});
