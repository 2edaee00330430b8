/**
 * Cluster mode, stopping: SIGTERM to the primary with jobs in flight in every
 * supervisor process exits 0 within shutdown.grace, loses nothing and uses no
 * attempt for the drain; a second signal forces the stop (exit 1) and the
 * primary still hands the forced processes' jobs back at once; kill -9 of the
 * primary leaves no orphan: each process sees the IPC channel close and drains.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { isAlive, spawnCluster, type SpawnedCluster } from '../helpers/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
const clusters: SpawnedCluster[] = [];

const count = async (sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows[0].n as number;

const CONFIG = {
  pool: { maxThreads: 2 },
  queues: { default: { concurrency: 5, jobsPerThread: 5, prefetch: 5 } },
  jobs: { lease: '60s' },
  reaper: { interval: '60s' },
  poll: { interval: '200ms' },
  shutdown: { grace: '10s' },
};

async function cluster(config: Record<string, unknown> = CONFIG) {
  const c = await spawnCluster(2, { databaseUrl: db.url, tasksDir: FIXTURE_TASKS, config });
  clusters.push(c);
  return c;
}

/** Enqueues `n` jobs of `ms` and waits until both processes run some. */
async function inFlightInBoth(c: SpawnedCluster, n: number, ms: number): Promise<void> {
  await enqueueMany(
    db.pool,
    Array.from({ length: n }, (_, i) => ({ kind: 'record', payload: { ms, i } })),
  );
  const pids = c.childPids().map(String);
  await until(
    'jobs running in both supervisor processes',
    async () =>
      (
        await db.pool.query(
          "SELECT DISTINCT split_part(locked_by, ':', 2) AS pid FROM jobvisor.jobs WHERE status = 'running' AND started_at IS NOT NULL",
        )
      ).rows.map((r) => r.pid as string),
    (running) => pids.every((p) => running.includes(p)),
    60_000,
  );
}

before(async () => {
  db = await createTestDatabase('cluster_shutdown');
  await db.pool.query(
    'CREATE TABLE executions (job_id bigint, attempt int, pid int, finished boolean DEFAULT false, at timestamptz DEFAULT clock_timestamp())',
  );
});

after(async () => {
  for (const c of clusters) {
    await c.stop('SIGKILL');
    for (const pid of c.childPids()) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
  await db.drop();
});

describe('cluster: stopping', () => {
  it('SIGTERM with jobs in flight in both processes: exit 0 within the grace, nothing lost, no attempt used', async () => {
    const c = await cluster();
    await inFlightInBoth(c, 60, 1500);
    const t0 = Date.now();
    const code = await c.stop('SIGTERM');
    const ms = Date.now() - t0;
    assert.equal(code, 0);
    assert.ok(ms < 10_000, `exited ${ms} ms after SIGTERM (grace 10 s)`);
    for (const pid of c.childPids()) assert.equal(isAlive(pid), false);
    const rows = (await db.pool.query('SELECT status, attempts, count(*)::int AS n FROM jobvisor.jobs GROUP BY 1, 2'))
      .rows;
    const by = Object.fromEntries(rows.map((r) => [`${r.status}/${r.attempts}`, r.n as number]));
    // Running ones finished (attempt 1); the claimed-but-unstarted went back with their attempt returned.
    assert.deepEqual(Object.keys(by).sort(), ['done/1', 'pending/0'].filter((k) => by[k]).sort(), JSON.stringify(by));
    assert.equal((by['done/1'] ?? 0) + (by['pending/0'] ?? 0), 60);
    assert.ok((by['done/1'] ?? 0) >= 2, 'jobs in flight in both finished');
    assert.equal(await count('SELECT count(*)::int AS n FROM executions'), by['done/1']);
    await db.pool.query('DELETE FROM jobvisor.jobs; TRUNCATE executions');
  });

  it("a second signal forces the stop (exit 1); the forced processes' jobs are handed back at once", async () => {
    const c = await cluster();
    await inFlightInBoth(c, 20, 60_000);
    c.child.kill('SIGTERM');
    await c.waitForLog(/^draining the cluster$/);
    const t0 = Date.now();
    const code = await c.stop('SIGTERM');
    assert.equal(code, 1);
    assert.ok(Date.now() - t0 < 8_000, 'the second signal did not wait for the 10 s grace');
    for (const pid of c.childPids()) assert.equal(isAlive(pid), false);
    assert.equal(await count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running'"), 0);
    await db.pool.query('DELETE FROM jobvisor.jobs; TRUNCATE executions');
  });

  it('kill -9 of the primary: both processes drain and exit by themselves; a new supervisor finishes the rest once', async () => {
    const c = await cluster({ ...CONFIG, shutdown: { grace: '5s' } });
    await inFlightInBoth(c, 40, 1000);
    const pids = c.childPids();
    await c.stop('SIGKILL');
    await until(
      'no orphan supervisor process',
      () => pids.filter(isAlive),
      (alive) => alive.length === 0,
      20_000,
    );
    assert.ok(
      c.logs.some((l) => l.msg === 'cluster child draining' && l.why === 'the primary process is gone'),
      'the processes drained because the primary was gone',
    );
    assert.equal(await count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running'"), 0);
    const s = await spawnSupervisor({ databaseUrl: db.url, tasksDir: FIXTURE_TASKS, config: CONFIG });
    try {
      await until(
        'every job done',
        () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'"),
        (n) => n === 40,
        60_000,
      );
    } finally {
      await s.stop('SIGTERM');
    }
    assert.equal(await count('SELECT count(DISTINCT job_id)::int AS n FROM executions'), 40);
    assert.equal(await count('SELECT count(*)::int AS n FROM executions'), 40, 'each ran once');
  });
});
