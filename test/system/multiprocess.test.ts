/**
 * Supervisors as separate processes against one database: no job runs twice,
 * a killed supervisor's jobs come back, a frozen one's late writes are fenced
 * off, SIGTERM drains, and cron fires once across replicas.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { assertDrains, killAll, type SpawnedSupervisor, spawnSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
const spawned: SpawnedSupervisor[] = [];

async function supervisor(config: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const s = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    env,
    config: {
      pool: { maxThreads: 1 },
      jobs: { lease: '3s' },
      reaper: { interval: '500ms' },
      poll: { interval: '1s' },
      backoff: { base: '100ms', max: '1s' },
      ...config,
    },
  });
  spawned.push(s);
  return s;
}

const count = async (sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows[0].n as number;

before(async () => {
  db = await createTestDatabase('multiprocess');
  await db.pool.query(
    'CREATE TABLE executions (job_id bigint, attempt int, pid int, finished boolean DEFAULT false, at timestamptz DEFAULT clock_timestamp())',
  );
});

after(async () => {
  for (const s of spawned)
    assert.ok(s.child.exitCode !== null || s.child.signalCode !== null, `supervisor ${s.pid} is gone`);
  await db.drop();
});

describe('several supervisor processes', () => {
  // A test that fails leaves its supervisors and jobs behind: stop them and drop
  // its unfinished jobs, so the next test sees only its own (one failure, one report).
  afterEach(async () => {
    await killAll(spawned);
    await db.pool.query("DELETE FROM jobvisor.jobs WHERE status IN ('pending', 'running')");
  });

  it('three supervisors run 3,000 jobs, each exactly once', async () => {
    const sups = await Promise.all(
      [1, 2, 3].map(() => supervisor({ queues: { default: { concurrency: 20, jobsPerThread: 20 } } })),
    );
    const ids = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 3000 }, (_, i) => ({ kind: 'record', payload: { i } })),
      )
    ).map((r) => r.id);
    await until(
      '3000 done',
      () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [ids]),
      (n) => n === 3000,
      120_000,
    );
    const twice = (
      await db.pool.query(
        `SELECT e.job_id, count(*)::int AS runs, j.attempts, j.errors
           FROM executions AS e JOIN jobvisor.jobs AS j ON j.id = e.job_id
          WHERE e.job_id = ANY($1) GROUP BY e.job_id, j.attempts, j.errors HAVING count(*) > 1 LIMIT 5`,
        [ids],
      )
    ).rows;
    assert.deepEqual(twice, [], 'one execution per job (these ran more than once, and why)');
    assert.equal(await count('SELECT count(*)::int AS n FROM executions WHERE job_id = ANY($1)', [ids]), 3000);
    assert.equal(
      await count('SELECT count(DISTINCT job_id)::int AS n FROM executions WHERE job_id = ANY($1)', [ids]),
      3000,
    );
    const owners = await count('SELECT count(DISTINCT locked_by)::int AS n FROM jobvisor.jobs WHERE id = ANY($1)', [
      ids,
    ]);
    assert.ok(owners >= 2, `work was shared (${owners} supervisors took jobs)`);
    await Promise.all(sups.map(assertDrains));
  });

  it('SIGKILL mid-job: the jobs run again on another supervisor within the lease, and welcome_email sends once per user', async () => {
    await db.pool.query('DROP TABLE IF EXISTS public.emails_sent');
    const env = { WELCOME_EMAIL_SEND_MS: '1500' };
    const victim = await supervisor({ queues: { default: { concurrency: 10, jobsPerThread: 10 } } }, env);
    const ids = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 10 }, (_, i) => ({ kind: 'welcome_email', payload: { user_id: i + 1 } })),
      )
    ).map((r) => r.id);
    // Wait until the victim holds them, mid-send, then kill it.
    await until(
      'victim running all',
      () =>
        count(
          "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'running' AND locked_by LIKE $2",
          [ids, `%:${victim.pid}:%`],
        ),
      (n) => n === 10,
      20_000,
    );
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    await victim.exited;
    const rescuer = await supervisor({ queues: { default: { concurrency: 10, jobsPerThread: 10 } } }, env);
    const readyAt = Date.now();
    await until(
      'all done after kill',
      () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [ids]),
      (n) => n === 10,
      30_000,
    );
    // Timed from the rescuer's readiness, not the kill: its own start-up is not the recovery's (on
    // a machine at load 17 the kill-to-done time, start-up included, was 15.6 s against 15 allowed).
    const took = Date.now() - Math.max(readyAt, killedAt);
    assert.ok(
      took < 12_000,
      `recovered ${took} ms after the rescuer was ready (lease 3 s + reaper 0.5 s + send 1.5 s)`,
    );
    const rows = (
      await db.pool.query('SELECT attempts, locked_by, errors FROM jobvisor.jobs WHERE id = ANY($1)', [ids])
    ).rows;
    for (const r of rows) {
      assert.equal(r.attempts, 2);
      assert.match(r.errors[0].error, /lease expired/);
      assert.ok(String(r.locked_by).includes(`:${rescuer.pid}:`));
    }
    assert.equal(await count('SELECT count(*)::int AS n FROM public.emails_sent'), 10, 'one send per user');
    await rescuer.stop();
  });

  it('SIGSTOP past the lease: another supervisor finishes the jobs; the stale one, resumed, changes nothing', async () => {
    const frozen = await supervisor({ queues: { default: { concurrency: 5, jobsPerThread: 5 } } });
    const ids = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 5 }, () => ({ kind: 'sleep', payload: { ms: 15_000, retryMs: 100 } })),
      )
    ).map((r) => r.id);
    await until(
      'frozen one started them',
      () => count('SELECT count(*)::int AS n FROM executions WHERE job_id = ANY($1)', [ids]),
      (n) => n === 5,
      20_000,
    );
    process.kill(frozen.pid, 'SIGSTOP');
    const held = (
      await db.pool.query("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'running'", [
        ids,
      ])
    ).rows[0].n;
    assert.equal(
      held,
      5,
      `all five were mid-run when frozen: ${JSON.stringify((await db.pool.query('SELECT id, status, attempts, locked_by, last_error, started_at, finished_at, run_at FROM jobvisor.jobs WHERE id = ANY($1)', [ids])).rows)}`,
    );
    try {
      const other = await supervisor({ queues: { default: { concurrency: 5, jobsPerThread: 5 } } });
      await until(
        'finished by the other',
        () =>
          db.pool
            .query('SELECT id, status, attempts, locked_by, last_error FROM jobvisor.jobs WHERE id = ANY($1)', [ids])
            .then((r) => r.rows),
        (rows) => rows.every((r) => r.status === 'done' && r.attempts === 2),
        30_000,
      );
      const before = (
        await db.pool.query(
          'SELECT id, status, attempts, locked_by, finished_at, last_error FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
          [ids],
        )
      ).rows;
      assert.ok(before.every((r) => String(r.locked_by).includes(`:${other.pid}:`)));
      process.kill(frozen.pid, 'SIGCONT');
      // The stale supervisor wakes: its heartbeat finds the leases gone or its outcomes are fenced off.
      await frozen.waitForLog(/lease lost|no longer owns the attempt/, 20_000);
      await frozen.stop('SIGTERM');
      const afterRows = (
        await db.pool.query(
          'SELECT id, status, attempts, locked_by, finished_at, last_error FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
          [ids],
        )
      ).rows;
      assert.deepEqual(afterRows, before, 'nothing the stale supervisor wrote changed the jobs');
      await other.stop();
    } finally {
      try {
        process.kill(frozen.pid, 'SIGCONT');
      } catch {
        // already gone
      }
    }
  });

  it('SIGTERM while tasks run: they finish within the grace period and the process exits 0', async () => {
    const s = await supervisor({
      queues: { default: { concurrency: 4, jobsPerThread: 4 } },
      shutdown: { grace: '10s' },
    });
    const ids = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 4 }, () => ({ kind: 'sleep', payload: { ms: 1500 } })),
      )
    ).map((r) => r.id);
    await until(
      'started',
      () => count('SELECT count(*)::int AS n FROM executions WHERE job_id = ANY($1)', [ids]),
      (n) => n === 4,
      20_000,
    );
    const t0 = Date.now();
    await assertDrains(s);
    assert.ok(Date.now() - t0 < 10_000);
    assert.equal(
      await count(
        "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done' AND attempts = 1",
        [ids],
      ),
      4,
    );
  });

  it('SIGTERM past the grace period: running jobs are aborted and handed back without using an attempt', async () => {
    const s = await supervisor({
      queues: { default: { concurrency: 3, jobsPerThread: 3 } },
      shutdown: { grace: '1s' },
    });
    const ids = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 3 }, () => ({ kind: 'sleep', payload: { ms: 60_000 } })),
      )
    ).map((r) => r.id);
    await until(
      'started',
      () => count('SELECT count(*)::int AS n FROM executions WHERE job_id = ANY($1)', [ids]),
      (n) => n === 3,
      20_000,
    );
    const t0 = Date.now();
    await assertDrains(s);
    assert.ok(Date.now() - t0 < 8_000, `exited in ${Date.now() - t0} ms`);
    const rows = (
      await db.pool.query('SELECT status, attempts, locked_until FROM jobvisor.jobs WHERE id = ANY($1)', [ids])
    ).rows;
    assert.deepEqual(
      rows.map((r) => [r.status, r.attempts, r.locked_until]),
      ids.map(() => ['pending', 0, null]),
    );
    await db.pool.query('DELETE FROM jobvisor.jobs WHERE id = ANY($1)', [ids]);
  });

  it('three replicas with one cron schedule make exactly one job per fire time', async () => {
    const schedule = {
      schedules: [{ name: 'every-second', cron: '* * * * * *', kind: 'record', payload: { from: 'cron' } }],
      scheduler: { interval: '200ms', catchUp: '5s' },
    };
    const sups = await Promise.all([1, 2, 3].map(() => supervisor(schedule)));
    await until(
      'five fires done',
      () =>
        count(
          "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE unique_key LIKE 'schedule:every-second:%' AND status = 'done'",
        ),
      (n) => n >= 5,
      30_000,
    );
    await Promise.all(sups.map((s) => s.stop('SIGTERM')));
    const perFire = (
      await db.pool.query(
        "SELECT unique_key, count(*)::int AS n FROM jobvisor.jobs WHERE unique_key LIKE 'schedule:every-second:%' GROUP BY 1",
      )
    ).rows;
    assert.ok(perFire.length >= 5);
    assert.ok(
      perFire.every((r) => r.n === 1),
      'one job per fire time',
    );
    const runs = await count(
      "SELECT count(*)::int AS n FROM executions e JOIN jobvisor.jobs j ON j.id = e.job_id WHERE j.unique_key LIKE 'schedule:every-second:%'",
    );
    assert.equal(
      runs,
      await count(
        "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE unique_key LIKE 'schedule:every-second:%' AND status = 'done'",
      ),
    );
  });
});
