/**
 * Cluster mode under load: 20,000 jobs across 2 supervisor processes with
 * cluster.maxJobs 3,000, so each slot is recycled several times. Every job is
 * done exactly once with one attempt (no recycle charged one); no process
 * exited unexpectedly; each replacement claimed before its predecessor began
 * to drain (no gap in claiming). The primary's /metrics: completed jobs summed
 * over the children, recycled ones included, equal the database's count, and
 * /readyz and /healthz answer for the whole.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { clusterWithExecutions, metricSum, stopCluster, type SpawnedCluster } from '../helpers/cluster.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

const JOBS = 20_000;
const MAX_JOBS = 3000;

let db: TestDatabase;
let cluster: SpawnedCluster;

const count = async (sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows[0].n as number;

before(async () => {
  ({ db, cluster } = await clusterWithExecutions('cluster_recycle', {
    pool: { maxThreads: 1, dbPoolSize: 4 },
    queues: { default: { concurrency: 20, jobsPerThread: 20 } },
    jobs: { lease: '60s' },
    reaper: { interval: '60s' },
    poll: { interval: '500ms' },
    shutdown: { grace: '10s' },
    cluster: { maxJobs: MAX_JOBS },
  }));
});

after(() => stopCluster(cluster, db));

const get = async (path: string) => {
  const res = await fetch(`http://127.0.0.1:${cluster.metricsPort}${path}`);
  return { status: res.status, text: await res.text() };
};

describe('cluster: recycling under load', () => {
  it('20,000 jobs, maxJobs 3,000, 2 processes: each job done once, no attempt charged, no gap, metrics add up', async () => {
    const ready = await until(
      '/readyz ready',
      () => get('/readyz'),
      (r) => r.status === 200,
      30_000,
    );
    assert.match(ready.text, /ready/);
    assert.equal((await get('/healthz')).status, 200);
    for (let i = 0; i < JOBS; i += 5000)
      await enqueueMany(
        db.pool,
        Array.from({ length: 5000 }, (_, j) => ({ kind: 'record', payload: { i: i + j } })),
      );
    await until(
      'every job done',
      () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'"),
      (n) => n === JOBS,
      300_000,
      500,
    );
    assert.equal(await count('SELECT count(*)::int AS n FROM executions'), JOBS, 'each job ran once');
    assert.equal(await count('SELECT count(DISTINCT job_id)::int AS n FROM executions'), JOBS);
    assert.equal(await count('SELECT count(*)::int AS n FROM jobvisor.jobs WHERE attempts <> 1'), 0);

    const recycleLogs = () =>
      cluster.logs.filter((l) => l.msg === 'recycling a supervisor process: its replacement starts before it drains');
    const recycles = recycleLogs();
    // Each slot runs about half the jobs, so each passes maxJobs at least once. How often beyond
    // that depends on how long a replacement takes to start (the old process claims meanwhile).
    assert.ok(recycles.length >= 2, `recycled ${recycles.length} times`);
    assert.ok(new Set(recycles.map((r) => r.child)).size === 2, 'both slots recycled');
    assert.equal(cluster.logs.filter((l) => /exited unexpectedly/.test(String(l.msg))).length, 0);
    // The replacement claimed (its `ready`) before the old process began to drain. A process
    // drains only once its replacement is ready, which on a loaded host can come after the last
    // job is done: wait for the first drain rather than expect one already logged.
    const drainOf = (r: (typeof recycles)[number]) =>
      cluster.logs.find((l) => l.msg === 'cluster child draining' && l.pid === Number(r.childPid));
    await until(
      'a recycled process drained',
      () => recycles.filter((r) => drainOf(r) !== undefined).length,
      (n) => n >= 1,
      30_000,
      100,
    );
    let drains = 0;
    for (const r of recycles) {
      const old = Number(r.childPid);
      const drained = drainOf(r);
      if (!drained) continue; // the last one may still be waiting for its replacement
      drains++;
      const started = cluster.logs.filter((l) => l.msg === 'supervisor process started' && l.child === r.child);
      const next = started[started.findIndex((l) => l.childPid === old) + 1];
      const nextReady = cluster.logs.find((l) => l.msg === 'ready' && l.pid === next?.childPid);
      assert.ok(nextReady, `the replacement of ${old} logged ready`);
      assert.ok(Number(nextReady.time) <= Number(drained.time), `the replacement of ${old} claimed before it drained`);
    }
    assert.ok(drains >= 1, 'a recycled process drained under load');
    const per = (await db.pool.query('SELECT pid, count(*)::int AS n FROM executions GROUP BY pid')).rows;
    console.log(`# ${recycles.length} recycles; jobs per process: ${per.map((r) => r.n as number).join(', ')}`);

    // Sum over the children, the recycled ones included.
    const metrics = await until(
      'the completed counter of every process read',
      async () => (await get('/metrics')).text,
      (text) => metricSum(text, 'jobvisor_jobs_completed_total') === JOBS,
      20_000,
      500,
    );
    assert.equal(metricSum(metrics, 'jobvisor_jobs_completed_total'), JOBS);
    // A process's count reaches the primary with its next stats message, up to a second after its
    // last job, so a recycle can still be asked for once every job is done (a replacement that
    // passed maxJobs with the last jobs): compare the counter with the log as both stand.
    await until(
      'the recycles counted as logged',
      async () => ({
        counted: metricSum((await get('/metrics')).text, 'jobvisor_cluster_recycles_total', /maxJobs/),
        logged: recycleLogs().length,
      }),
      (r) => r.counted === r.logged,
      20_000,
      500,
    );
    assert.equal(metricSum(metrics, 'jobvisor_cluster_restarts_total'), 0);
  });
});
