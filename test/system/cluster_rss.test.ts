/**
 * cluster.maxRssMb end to end: one job in one of 2 supervisor processes holds
 * 800 MB for the life of its thread (a native module's leak, made quick); the
 * primary sees that process's resident memory pass the limit, starts its
 * replacement, then drains it. Every job, before and after, is done once with
 * one attempt, no process exits unexpectedly, and the recycle is counted with
 * its reason.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { clusterWithExecutions, isAlive, metricSum, stopCluster, type SpawnedCluster } from '../helpers/cluster.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

const MAX_RSS_MB = 700;
const HOG_MB = 800;

let db: TestDatabase;
let cluster: SpawnedCluster;

const count = async (sql: string) => (await db.pool.query(sql)).rows[0].n as number;

before(async () => {
  ({ db, cluster } = await clusterWithExecutions('cluster_rss', {
    pool: { maxThreads: 1, dbPoolSize: 4 },
    queues: { default: { concurrency: 10, jobsPerThread: 10 } },
    jobs: { lease: '60s' },
    reaper: { interval: '60s' },
    poll: { interval: '500ms' },
    shutdown: { grace: '10s' },
    cluster: { maxRssMb: MAX_RSS_MB },
  }));
});

after(() => stopCluster(cluster, db));

describe('cluster: recycling on resident memory', () => {
  it(`a process past maxRssMb ${MAX_RSS_MB} is replaced, then drained; no job lost or charged`, async () => {
    await enqueueMany(
      db.pool,
      Array.from({ length: 100 }, (_, i) => ({ kind: 'record', payload: { i } })),
    );
    await enqueue(db.pool, 'rss_hog', { mb: HOG_MB });
    const recycle = await until(
      'a recycle for resident memory',
      () => Promise.resolve(cluster.logs.find((l) => l.reason === 'maxRssMb')),
      (l) => l !== undefined,
      60_000,
    );
    // Past the limit in bytes; the log rounds to whole MB, so 700.3 MB reads 700.
    assert.ok(Number(recycle?.rssMb) >= MAX_RSS_MB, `recycled at ${String(recycle?.rssMb)} MB`);
    // Jobs enqueued after the recycle began run on the processes that remain.
    await enqueueMany(
      db.pool,
      Array.from({ length: 100 }, (_, i) => ({ kind: 'record', payload: { i: 100 + i } })),
    );
    const old = Number(recycle?.childPid);
    await until(
      'the recycled process drained and gone',
      () => Promise.resolve(!isAlive(old)),
      (gone) => gone,
      60_000,
    );
    await until(
      'every job done',
      () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'"),
      (n) => n === 201,
      60_000,
    );
    assert.equal(await count('SELECT count(*)::int AS n FROM executions'), 201, 'each job ran once');
    assert.equal(await count('SELECT count(DISTINCT job_id)::int AS n FROM executions'), 201);
    assert.equal(await count('SELECT count(*)::int AS n FROM jobvisor.jobs WHERE attempts <> 1'), 0);
    assert.equal(cluster.logs.filter((l) => /exited unexpectedly/.test(String(l.msg))).length, 0);
    const metrics = await (await fetch(`http://127.0.0.1:${cluster.metricsPort}/metrics`)).text();
    assert.ok(metricSum(metrics, 'jobvisor_cluster_recycles_total', /maxRssMb/) >= 1, 'the recycle is counted');
    assert.equal(metricSum(metrics, 'jobvisor_cluster_restarts_total'), 0);
  });
});
