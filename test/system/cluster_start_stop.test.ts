/**
 * Cluster mode, a stop while the supervisor processes start: jobs are pending
 * from the start, both processes are held in their start-up (their task check
 * imports `gated_import`, whose module waits for a file), and then the stop
 * comes: SIGTERM to the primary alone, or SIGINT to the whole process group
 * (Ctrl-C in a terminal; systemd's KillMode=control-group is the same with
 * SIGTERM). The gate opens right after the signal, as a slow import would end.
 * The start is cancelled: no job is claimed or charged an attempt after the
 * signal, every process is gone, and the primary exits 0.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { isAlive, spawnCluster, type SpawnedCluster } from '../helpers/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
const clusters: SpawnedCluster[] = [];

const CONFIG = {
  pool: { maxThreads: 2 },
  queues: { default: { concurrency: 5, jobsPerThread: 5, prefetch: 5 } },
  poll: { interval: '200ms' },
  // The primary's last resort comes at grace + 13 s: a drain that waits for it fails the exit code.
  shutdown: { grace: '2s' },
};

const count = async (sql: string) => (await db.pool.query(sql)).rows[0].n as number;

before(async () => {
  db = await createTestDatabase('cluster_start_stop');
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

/** A cluster of 2 whose processes are both held in their task check, with 30 jobs pending. */
async function heldInStartUp(options: { detached: boolean }) {
  await db.pool.query('DELETE FROM jobvisor.jobs; TRUNCATE executions');
  await enqueueMany(
    db.pool,
    Array.from({ length: 30 }, (_, i) => ({ kind: 'record', payload: { ms: 50, i } })),
  );
  const gate = path.join(tmpdir(), `jobvisor-start-stop-${process.pid}-${Date.now()}`);
  const c = await spawnCluster(2, {
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: CONFIG,
    env: { JOBVISOR_TEST_IMPORT_GATE: gate },
    waitReady: false,
    detached: options.detached,
  });
  clusters.push(c);
  // Each process's options thread is importing gated_import: it has its supervisor and waits in its start-up.
  await until(
    'both supervisor processes in their task check',
    () => (existsSync(`${gate}.imports`) ? readFileSync(`${gate}.imports`, 'utf8').trim().split('\n').length : 0),
    (n) => n >= 2,
    90_000,
  );
  assert.equal(c.childPids().length, 2);
  return { c, open: () => writeFileSync(gate, '') };
}

/** Waits for the exit; checks nothing ran, nothing was charged, no process is left. */
async function assertCancelled(c: SpawnedCluster, signalledAt: number) {
  const { code, signal } = await c.exited;
  const exitMs = Date.now() - signalledAt;
  assert.equal(signal, null);
  assert.equal(code, 0, `the primary exits 0; last lines: ${JSON.stringify(c.logs.slice(-6))}`);
  for (const pid of c.childPids()) assert.equal(isAlive(pid), false, `supervisor process ${pid} is gone`);
  const touched = await count(
    "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status <> 'pending' OR attempts > 0 OR started_at IS NOT NULL",
  );
  assert.equal(touched, 0, 'no job claimed, started or charged an attempt after the signal');
  assert.equal(await count('SELECT count(*)::int AS n FROM executions'), 0, 'no job ran');
  assert.equal(await count('SELECT count(*)::int AS n FROM jobvisor.supervisors'), 0, 'no supervisor row left');
  assert.equal(c.logs.filter((l) => l.msg === 'ready').length, 0, 'no process said ready');
  return exitMs;
}

describe('cluster: a stop during start-up', () => {
  it('SIGTERM to the primary while its processes start: the start is cancelled, nothing claimed, exit 0', async () => {
    const { c, open } = await heldInStartUp({ detached: false });
    const t0 = Date.now();
    c.child.kill('SIGTERM');
    await c.waitForLog(/^draining the cluster$/);
    open();
    const ms = await assertCancelled(c, t0);
    console.log(`# SIGTERM to the primary during start-up: exit 0 after ${ms} ms`);
  });

  it('SIGINT to the whole process group (Ctrl-C) while the processes start: the same', async () => {
    const { c, open } = await heldInStartUp({ detached: true });
    const t0 = Date.now();
    process.kill(-c.pid, 'SIGINT');
    await c.waitForLog(/^draining the cluster$/);
    open();
    const ms = await assertCancelled(c, t0);
    console.log(`# SIGINT to the process group during start-up: exit 0 after ${ms} ms`);
  });

  it('a task that cannot be loaded: the primary exits non-zero, as a lone start does, and leaves no process', async () => {
    await db.pool.query('DELETE FROM jobvisor.jobs; TRUNCATE executions');
    await enqueueMany(db.pool, [{ kind: 'broken', payload: {} }]);
    const tasks = mkdtempSync(path.join(tmpdir(), 'jobvisor-broken-task-'));
    writeFileSync(
      path.join(tasks, 'broken.mjs'),
      "throw new Error('broken at import');\nexport default async () => {};\n",
    );
    const c = await spawnCluster(2, { databaseUrl: db.url, tasksDir: tasks, config: CONFIG, waitReady: false });
    clusters.push(c);
    const t0 = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const exit = await Promise.race([
      c.exited,
      new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 60_000))),
    ]);
    clearTimeout(timer);
    if (exit === 'hung')
      assert.fail(`the primary still runs 60 s after start; last lines: ${JSON.stringify(c.logs.slice(-6))}`);
    assert.equal(exit.signal, null);
    assert.equal(exit.code, 1, `the primary exits 1; last lines: ${JSON.stringify(c.logs.slice(-6))}`);
    assert.ok(
      c.logs.some((l) => l.msg === 'a supervisor process failed to start: stopping the cluster'),
      'the primary says why it stops',
    );
    for (const pid of c.childPids()) assert.equal(isAlive(pid), false, `supervisor process ${pid} is gone`);
    assert.equal(await count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'pending'"), 1);
    console.log(`# a task that cannot be loaded: the cluster exits 1 after ${Date.now() - t0} ms`);
  });
});
