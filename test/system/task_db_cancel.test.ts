/**
 * A stopped job's ctx.db statement stops on the server too (src/worker/run_connections.ts,
 * src/db/cancel.ts, src/worker/task_db.ts). Supervisors are real processes; the
 * statement is a real `pg_sleep(60)` (test/fixtures/tasks/db_sleep.js), watched in
 * pg_stat_activity. Before, a timed-out job's statement ran on for its 60 s after
 * the thread was terminated, one more per attempt, and outlived a killed supervisor.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { report, until } from '../helpers/chaos/measure.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

/** How long after its job stopped a statement may still show (a cancel request, or the server's client check). */
const GONE_WITHIN_MS = 3000;

let db: TestDatabase;
const spawned: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('task_db_cancel');
});

after(async () => {
  await Promise.all(spawned.map((s) => s.stop('SIGKILL')));
  // Whatever a failing run left sleeping must not hold the database's drop.
  await db.pool.query(
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%db_sleep job%' AND pid <> pg_backend_pid()",
  );
  await db.drop();
});

/** A supervisor for test `t`, killed when `t` ends however it ends (a failed test leaves none claiming). */
function start(t: TestContext, config: Record<string, unknown> = {}): Promise<SpawnedSupervisor> {
  return spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: {
      pool: { maxThreads: 1, dbPoolSize: 3 },
      queues: { default: { concurrency: 3, jobsPerThread: 3 } },
      jobs: { timeout: '20s' },
      backoff: { base: '100ms', max: '200ms' },
      ...config,
    },
    readyTimeoutMs: 60_000,
  }).then((s) => {
    spawned.push(s);
    t.after(() => s.stop('SIGKILL'));
    return s;
  });
}

interface Sleeping {
  pid: number;
  query: string;
  state: string;
  /** How long the statement has run, on the server's clock. */
  age_ms: number;
}

/** The db_sleep statements of `jobId` the server is running (any state but idle). */
async function sleeping(jobId: string): Promise<Sleeping[]> {
  const { rows } = await db.pool.query<Sleeping>(
    `SELECT pid, query, state, (extract(epoch FROM clock_timestamp() - query_start) * 1000)::int AS age_ms
       FROM pg_stat_activity WHERE query LIKE $1 AND state <> 'idle' AND pid <> pg_backend_pid()`,
    [`%db_sleep job ${jobId} %`],
  );
  return rows;
}

async function jobRow(id: string): Promise<{ status: string; attempts: number; last_error: string | null }> {
  const { rows } = await db.pool.query<{ status: string; attempts: number; last_error: string | null }>(
    'SELECT status, attempts, last_error FROM jobvisor.jobs WHERE id = $1',
    [id],
  );
  return rows[0] as { status: string; attempts: number; last_error: string | null };
}

/**
 * Watches `jobId`'s statements every 50 ms until `end()`: the most seen at once, and
 * each one's age when last seen (from its start, on the server's clock).
 */
function watch(jobId: string): {
  most: () => number;
  lifetimes: () => number[];
  queries: () => string[];
  end: () => Promise<void>;
} {
  let most = 0;
  const oldest = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const rows = await sleeping(jobId);
      most = Math.max(most, rows.length);
      for (const r of rows) oldest.set(`${r.pid}:${r.query}`, r.age_ms);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    most: () => most,
    lifetimes: () => [...oldest.values()],
    queries: () => [...oldest.keys()].map((k) => k.slice(k.indexOf(':') + 1)),
    end: async () => {
      running = false;
      await loop;
    },
  };
}

describe("a stopped job's ctx.db statement", () => {
  it('is cancelled at the job timeout, attempt after attempt, and its neighbour on the thread runs on', async (t) => {
    const s = await start(t);
    // Same thread (one thread, three jobs per thread): the neighbour sleeps 3 s in its own statement.
    const neighbour = (await enqueue(db.pool, 'db_sleep', { seconds: 3 })).id;
    // Both try another statement once theirs is cancelled: through the client they hold, and through the pool.
    const timedOut = (
      await enqueue(db.pool, 'db_sleep_short', { seconds: 60, client: true, again: true }, { maxAttempts: 2 })
    ).id;
    const second = (await enqueue(db.pool, 'db_sleep_short', { seconds: 60, again: true }, { maxAttempts: 1 })).id;
    const seen = watch(timedOut);
    const seenSecond = watch(second);
    const dead = await until(
      'the 1 s job dead-lettered after its 2 attempts',
      () => jobRow(timedOut),
      (j) => j.status === 'failed',
      60_000,
    );
    const deadAt = performance.now();
    const gone = await until(
      `no statement of job ${timedOut} left`,
      () => sleeping(timedOut),
      (rows) => rows.length === 0,
      GONE_WITHIN_MS,
    ).then(
      () => Math.round(performance.now() - deadAt),
      (err: Error) => err,
    );
    await until(
      `no statement of job ${second} left`,
      () => sleeping(second),
      (rows) => rows.length === 0,
      GONE_WITHIN_MS,
    );
    await Promise.all([seen.end(), seenSecond.end()]);
    const n = await until(
      'the neighbour done',
      () => jobRow(neighbour),
      (j) => j.status === 'done' || j.status === 'failed',
      30_000,
    );
    report('ctx-db.timeout-cancel', {
      attempts: dead.attempts,
      statementLifetimesMs: [...seen.lifetimes(), ...seenSecond.lifetimes()],
      startedAfterTheStop: [...seen.queries(), ...seenSecond.queries()].filter((q) => q.includes('again')).length,
      mostAtOnce: seen.most(),
      goneAfterDeadLetterMs: gone instanceof Error ? null : gone,
      neighbour: n.status,
      cancelledLines: s.logs.filter((l) => String(l.msg).includes('ctx.db statements are cancelled')).length,
    });
    assert.ok(!(gone instanceof Error), gone instanceof Error ? gone.message : '');
    assert.equal(dead.attempts, 2);
    assert.match(dead.last_error ?? '', /timed out/);
    assert.equal(seen.most(), 1, 'each attempt’s statement was gone before the next attempt began');
    for (const ms of [...seen.lifetimes(), ...seenSecond.lifetimes()])
      assert.ok(ms < 1000 + GONE_WITHIN_MS, `a statement lived ${ms} ms past a 1 s timeout`);
    assert.deepEqual(
      [...seen.queries(), ...seenSecond.queries()].filter((q) => q.includes('again')),
      [],
      'no statement of a stopped job started after its stop',
    );
    assert.deepEqual([n.status, n.attempts], ['done', 1], 'the neighbour’s statement was not cancelled');
    await s.stop();
  });

  it('is cancelled when a shutdown aborts the job at the end of the grace', async (t) => {
    const s = await start(t, { shutdown: { grace: '1s' } });
    const id = (await enqueue(db.pool, 'db_sleep', { seconds: 60 })).id;
    await until(
      'the statement running',
      () => sleeping(id),
      (rows) => rows.some((r) => r.state === 'active'),
      30_000,
    );
    const code = await s.stop('SIGTERM');
    const exitedAt = performance.now();
    const gone = await until(
      `no statement of job ${id} left after the drain`,
      () => sleeping(id),
      (rows) => rows.length === 0,
      GONE_WITHIN_MS,
    ).then(
      () => Math.round(performance.now() - exitedAt),
      (err: Error) => err,
    );
    const job = await jobRow(id);
    report('ctx-db.shutdown-cancel', {
      code,
      goneAfterExitMs: gone instanceof Error ? null : gone,
      status: job.status,
      attempts: job.attempts,
    });
    assert.equal(code, 0);
    assert.ok(!(gone instanceof Error), gone instanceof Error ? gone.message : '');
    assert.deepEqual([job.status, job.attempts], ['pending', 0], 'handed back without using its attempt');
  });

  it('stops within seconds when the supervisor is killed (the server checks that its client is there)', async (t) => {
    const version = await db.pool.query<{ v: number }>("SELECT current_setting('server_version_num')::int AS v");
    if ((version.rows[0]?.v ?? 0) < 140000) {
      t.skip('client_connection_check_interval needs PostgreSQL 14');
      return;
    }
    const s = await start(t);
    const id = (await enqueue(db.pool, 'db_sleep', { seconds: 60 })).id;
    await until(
      'the statement running',
      () => sleeping(id),
      (rows) => rows.some((r) => r.state === 'active'),
      30_000,
    );
    const killedAt = performance.now();
    await s.stop('SIGKILL');
    const gone = await until(
      `no statement of job ${id} left after SIGKILL`,
      () => sleeping(id),
      (rows) => rows.length === 0,
      GONE_WITHIN_MS,
    ).then(
      () => Math.round(performance.now() - killedAt),
      (err: Error) => err,
    );
    report('ctx-db.killed-supervisor', { goneAfterKillMs: gone instanceof Error ? null : gone });
    assert.ok(!(gone instanceof Error), gone instanceof Error ? gone.message : '');
  });
});
