/**
 * Chaos: lease loss. A supervisor holding running jobs stops renewing their
 * leases, once because its process is frozen (SIGSTOP) and once because the
 * network between it and the database is cut (a proxy that stops forwarding
 * every connection, new ones included). Another supervisor reaps the leases and
 * finishes the jobs. Then the first one comes back (SIGCONT, or the cut heals and
 * everything it sent arrives late): its writes must change nothing (fencing).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { count, httpGet, report, until } from '../helpers/chaos/measure.ts';
import { startProxy, type Proxy } from '../helpers/chaos/proxy.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const JOBS = 10;
const LEASE = '4s';

let db: TestDatabase;
let proxy: Proxy;
const spawned: SpawnedSupervisor[] = [];

async function supervisor(databaseUrl: string): Promise<SpawnedSupervisor> {
  const s = await spawnSupervisor({
    databaseUrl,
    tasksDir: FIXTURE_TASKS,
    config: {
      pool: { maxThreads: 1, dbPoolSize: 2 },
      queues: { default: { concurrency: JOBS, jobsPerThread: JOBS } },
      jobs: { lease: LEASE },
      reaper: { interval: '500ms' },
      poll: { interval: '1s' },
      shutdown: { grace: '2s' },
    },
    readyTimeoutMs: 60_000,
  });
  spawned.push(s);
  return s;
}

before(async () => {
  db = await createTestDatabase('chaos_lease');
  await db.pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
  proxy = await startProxy({ port: Number(new URL(db.url).port) });
});

after(async () => {
  for (const s of spawned) {
    try {
      process.kill(s.pid, 'SIGCONT');
    } catch {
      // already gone
    }
  }
  await Promise.all(spawned.map((s) => s.stop('SIGKILL')));
  await proxy.close();
  await db.drop();
});

const rowsOf = async (ids: string[]) =>
  (
    await db.pool.query(
      'SELECT id, status, attempts, locked_by, locked_until, finished_at, last_error, errors FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
      [ids],
    )
  ).rows;

/** Job ids the supervisor's log says it stopped (lease lost) or could not record (fenced). */
function refused(s: SpawnedSupervisor): { lost: Set<string>; fenced: Set<string> } {
  const lost = new Set<string>();
  const fenced = new Set<string>();
  for (const line of s.logs) {
    if (line.msg === 'lease lost, job stopped') for (const id of line.jobIds as string[]) lost.add(id);
    if (line.msg === 'outcome not written: this supervisor no longer owns the attempt')
      for (const id of line.jobIds as string[]) fenced.add(id);
  }
  return { lost, fenced };
}

/**
 * Common shape: `stale` holds JOBS running jobs; `fault()` takes it away from
 * the database; `rescuer` finishes them; `heal()` brings it back.
 */
async function leaseLoss(name: string, stale: SpawnedSupervisor, fault: () => void, heal: () => void) {
  const ids = (
    await enqueueMany(
      db.pool,
      Array.from({ length: JOBS }, () => ({ kind: 'chaos_run', payload: { ms: 5000, retryMs: 50 } })),
    )
  ).map((r) => r.id);
  await until(
    'the stale supervisor runs every job',
    () =>
      count(
        db.pool,
        "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'running' AND locked_by LIKE $2",
        [ids, `%:${stale.pid}:%`],
      ),
    (n) => n === JOBS,
    30_000,
  );
  const faultAt = Date.now();
  fault();
  let rescuer: SpawnedSupervisor | undefined;
  try {
    rescuer = await supervisor(db.url);
    const finished = await until(
      'the rescuer finishes every job',
      () => rowsOf(ids),
      (rows) => rows.every((r) => r.status === 'done' && String(r.locked_by).includes(`:${rescuer?.pid}:`)),
      60_000,
      100,
    );
    const rescuedMs = Date.now() - faultAt;
    const staleReady = await httpGet(stale.metricsPort, '/readyz', 2500);
    // Past the stale supervisor's own 5 s task time, so its tasks have finished by the time it is back.
    await until(
      'the stale tasks would have finished',
      () => Date.now() - faultAt,
      (ms) => ms > 6000,
      10_000,
      100,
    );
    const healAt = Date.now();
    heal();
    // The stale supervisor notices: its heartbeat finds the leases gone, or its outcomes are refused.
    const noticed = await until(
      'the stale supervisor has given up every job',
      () => refused(stale),
      (r) => ids.every((id) => r.lost.has(id) || r.fenced.has(id)),
      30_000,
      100,
    );
    const noticedMs = Date.now() - healAt;
    assert.equal(await stale.stop('SIGTERM'), 0, 'the stale supervisor still drains and exits 0');
    const afterRows = await rowsOf(ids);
    const staleRuns = await count(
      db.pool,
      'SELECT count(*)::int AS n FROM chaos_runs WHERE job_id = ANY($1) AND pid = $2',
      [ids, stale.pid],
    );
    const rescuerRuns = await count(
      db.pool,
      'SELECT count(*)::int AS n FROM chaos_runs WHERE job_id = ANY($1) AND pid = $2',
      [ids, rescuer.pid],
    );
    report(`lease-loss.${name}`, {
      jobs: JOBS,
      lease: LEASE,
      rescuedAfterFaultMs: rescuedMs,
      staleReadyzDuringFault: staleReady.status,
      staleNoticedAfterHealMs: noticedMs,
      staleLeaseLost: noticed.lost.size,
      staleFenced: noticed.fenced.size,
      rowsChangedByStale: afterRows.filter((r, i) => JSON.stringify(r) !== JSON.stringify(finished[i])).length,
      lateTaskSideEffectsByStale: staleRuns,
      runsByRescuer: rescuerRuns,
    });
    assert.deepEqual(afterRows, finished, 'nothing the stale supervisor wrote changed the jobs');
    assert.ok(
      afterRows.every((r) => r.attempts === 2 && /lease expired/.test(r.errors[0].error)),
      'each job: one expired attempt, one done',
    );
    assert.equal(rescuerRuns, JOBS, 'the rescuer ran each job once');
    await rescuer.stop('SIGTERM');
  } finally {
    heal();
  }
}

describe('chaos: lease loss', () => {
  it('SIGSTOP past the lease: another supervisor finishes the jobs; after SIGCONT the stale writes change nothing', async () => {
    const stale = await supervisor(db.url);
    await leaseLoss(
      'sigstop',
      stale,
      () => process.kill(stale.pid, 'SIGSTOP'),
      () => {
        try {
          process.kill(stale.pid, 'SIGCONT');
        } catch {
          // already gone
        }
      },
    );
  });

  it('network cut past the lease (proxy stops forwarding): the rescuer finishes; the late writes after the cut heals change nothing', async () => {
    const stale = await supervisor(proxy.urlFor(db.url));
    await leaseLoss(
      'network-cut',
      stale,
      () => proxy.cut(),
      () => proxy.heal(),
    );
  });
});
