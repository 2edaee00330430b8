/**
 * Cluster mode, a native crash: a task whose thread sends its own process
 * SIGSEGV (then SIGABRT) kills only its supervisor process. The other keeps
 * running jobs; the dead one's running jobs are pending again within 1 s of
 * its exit (leases are 60 s: only the primary's hand-back can do that); a new
 * process starts in its slot within 2 s; one log line says so; the attempt of
 * the crashing job is counted (it dead-letters at max_attempts 1).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { clusterWithExecutions, isAlive, metricSum, stopCluster, type SpawnedCluster } from '../helpers/cluster.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let cluster: SpawnedCluster;

const count = async (sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows[0].n as number;

before(async () => {
  ({ db, cluster } = await clusterWithExecutions('cluster_crash', {
    pool: { maxThreads: 2 },
    queues: { default: { concurrency: 10, jobsPerThread: 10, prefetch: 0 } },
    // Nothing here may come back through a lease.
    jobs: { lease: '60s' },
    reaper: { interval: '60s' },
    poll: { interval: '200ms' },
    backoff: { base: '100ms', max: '1s' },
    shutdown: { grace: '5s' },
  }));
});

after(() => stopCluster(cluster, db));

/** The pid of the supervisor running job `id`, once one runs it. */
async function runnerOf(id: string): Promise<number> {
  const row = await until(
    `job ${id} running`,
    async () => (await db.pool.query('SELECT locked_by, status FROM jobvisor.jobs WHERE id = $1', [id])).rows[0],
    (r) => r.status === 'running',
    30_000,
    10,
  );
  return Number(String(row.locked_by).split(':')[1]);
}

/** `n` more 50-ms jobs for both processes. */
const enqueueRecords = (n: number) =>
  enqueueMany(
    db.pool,
    Array.from({ length: n }, (_, i) => ({ kind: 'record', payload: { ms: 50, i } })),
  );

/**
 * Runs of process `pid` after `sinceMs`. Work stays pending until there are some: a loaded machine
 * once left the other process time to finish the whole backlog first, leaving nothing to claim.
 */
async function runsSince(pid: number, sinceMs: number): Promise<number> {
  const ran = await count(
    'SELECT count(*)::int AS n FROM executions WHERE pid = $1 AND at > to_timestamp($2 / 1000.0)',
    [pid, sinceMs],
  );
  if (ran === 0 && (await count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'pending'")) < 200)
    await enqueueRecords(500);
  return ran;
}

async function crashOne(signal: 'SIGSEGV' | 'SIGABRT') {
  const restartsBefore = cluster.logs.filter((l) => /exited unexpectedly/.test(String(l.msg))).length;
  // The crash job first, then steady work on both processes: 50 ms jobs, more than both finish during the test.
  const crash = (await enqueue(db.pool, 'native_crash', { signal, ms: 1500 }, { maxAttempts: 1 })).id;
  await enqueueRecords(1500);
  const dead = await runnerOf(crash);
  const slot = cluster.logs.find((l) => l.msg === 'supervisor process started' && l.childPid === dead)?.child;
  const survivor = cluster.childPids().find((p) => p !== dead && isAlive(p)) as number;
  assert.ok(survivor, 'the other supervisor process is alive');
  const deadId = (await db.pool.query('SELECT locked_by FROM jobvisor.jobs WHERE id = $1', [crash])).rows[0]
    .locked_by as string;

  // Its exit, to within a few milliseconds.
  await until(
    'the crashing process exits',
    () => isAlive(dead),
    (alive) => !alive,
    30_000,
    2,
  );
  const exitedAt = Date.now();
  const running = await until(
    "the dead process's jobs handed back",
    () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running' AND locked_by = $1", [deadId]),
    (n) => n === 0,
    5_000,
    5,
  );
  const handedBackMs = Date.now() - exitedAt;
  assert.equal(running, 0);
  assert.ok(handedBackMs <= 1000, `running jobs of the dead process pending again ${handedBackMs} ms after its exit`);

  const line = await cluster.waitForLog(/exited unexpectedly/, 5_000, (l) => l.childPid === dead);
  assert.equal(line.signal, signal);
  assert.equal(line.supervisor, deadId);
  assert.ok(
    Number(line.handedBack) >= 2,
    `the crash job and others in flight were handed back: ${String(line.handedBack)}`,
  );
  const started = await cluster.waitForLog(
    /^supervisor process started$/,
    5_000,
    (l) =>
      l.child === slot &&
      l.childPid !== dead &&
      !cluster
        .childPids(slot as number)
        .slice(0, -1)
        .includes(Number(l.childPid)),
  );
  const restartMs = Number(started.time) - exitedAt;
  assert.ok(restartMs <= 2000, `a new process in slot ${String(slot)} ${restartMs} ms after the exit`);

  // The survivor kept running jobs through it: runs after the exit. Not within a fixed second: at
  // load 15 that second once held none of its runs.
  const during = await until(
    'the survivor runs jobs after the crash',
    () => runsSince(survivor, exitedAt),
    (n) => n > 0,
    30_000,
  );
  assert.ok(during > 0);
  assert.ok(isAlive(survivor), 'only the crashing process died');

  const job = (await db.pool.query('SELECT status, attempts, last_error FROM jobvisor.jobs WHERE id = $1', [crash]))
    .rows[0];
  assert.equal(job.status, 'failed', 'the attempt of the crash is counted: max_attempts 1 dead-letters it');
  assert.equal(job.attempts, 1);
  assert.match(job.last_error, new RegExp(`exited \\(signal ${signal}\\)`));

  const newPid = Number(started.childPid);
  const ready = await until(
    'the new process claims',
    () => runsSince(newPid, 0),
    (n) => n > 0,
    60_000,
  );
  assert.ok(ready > 0);
  const restartLines = cluster.logs.filter((l) => /exited unexpectedly/.test(String(l.msg))).length;
  assert.equal(restartLines, restartsBefore + 1, 'one log line per restart');

  await until(
    'every record job done',
    () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE kind = 'record' AND status <> 'done'"),
    (n) => n === 0,
    120_000,
    200,
  );
  // Runs twice only for jobs the dead process was running.
  const twice = await count(
    `SELECT count(*)::int AS n FROM (SELECT job_id FROM executions GROUP BY job_id HAVING count(*) > 1
        AND bool_and(pid <> $1)) t`,
    [dead],
  );
  assert.equal(twice, 0);
  await db.pool.query('TRUNCATE executions');
  return { handedBackMs, restartMs, newPid };
}

describe('cluster: a native crash in one task', () => {
  it('SIGSEGV from a task thread: only its process dies, its jobs are back within 1 s, a new one within 2 s', async () => {
    const r = await crashOne('SIGSEGV');
    console.log(`# SIGSEGV: jobs pending ${r.handedBackMs} ms after the exit, new process ${r.restartMs} ms after`);
  });

  it('SIGABRT the same way; /metrics counts both restarts and two live processes', async () => {
    const r = await crashOne('SIGABRT');
    console.log(`# SIGABRT: jobs pending ${r.handedBackMs} ms after the exit, new process ${r.restartMs} ms after`);
    const text = await (await fetch(`http://127.0.0.1:${cluster.metricsPort}/metrics`)).text();
    assert.equal(metricSum(text, 'jobvisor_cluster_restarts_total'), 2);
    assert.equal(metricSum(text, 'jobvisor_cluster_children'), 2);
    assert.ok(metricSum(text, 'jobvisor_cluster_jobs_handed_back_total') >= 4);
    assert.match(text, /jobvisor_pool_threads\{child="0"\}/);
    assert.match(text, /jobvisor_pool_threads\{child="1"\}/);
  });

  it('the supervisors table names the primary and the slot of each process', async () => {
    const primary = String(cluster.logs.find((l) => l.msg === 'cluster ready')?.primary);
    const rows = await until(
      'both processes in the supervisors table',
      async () =>
        (await db.pool.query('SELECT cluster_primary, cluster_slot FROM jobvisor.supervisors ORDER BY cluster_slot'))
          .rows,
      (r) => r.length === 2,
      20_000,
    );
    assert.deepEqual(rows, [
      { cluster_primary: primary, cluster_slot: 0 },
      { cluster_primary: primary, cluster_slot: 1 },
    ]);
  });
});
