/**
 * A failover mid-burst, for real: a primary and a streaming standby
 * (standby.ts), two supervisor processes and a producer reaching them through
 * one TCP proxy (the Kubernetes Service). While jobs flow, one supervisor is
 * SIGKILLed and the primary stopped with `-m immediate`; the standby is
 * promoted (`pg_ctl promote`) and the proxy pointed at it.
 *
 * It returns what was measured; the test files decide what must hold with
 * synchronous and with asynchronous replication. The facts come from outside
 * the database where the database could be wrong: ids the producer was told
 * were committed, ids a supervisor logged as completed (logged after the
 * write), and start/end lines written by the task itself (failover_run.js).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { enqueueMany } from '../../../src/queue/enqueue.ts';
import { FIXTURE_TASKS } from '../inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../supervisor.ts';
import { count, httpGet, pickupMs, until } from './measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from './postgres.ts';
import { startProxy, type Proxy } from './proxy.ts';
import { overlaps, runsOf } from './runs.ts';
import { makeSynchronous, startStandby } from './standby.ts';

export interface FailoverResult {
  replication: 'synchronous' | 'asynchronous';
  committed: number;
  /** Committed enqueues the new primary does not have. */
  lostEnqueues: number;
  /** Jobs a supervisor logged as completed that are not done on the new primary. */
  lostOutcomes: number;
  /** Executions of a job that overlapped another execution of it. */
  concurrentRuns: number;
  /** Jobs that ran more than once (not at the same time). */
  reRuns: number;
  /** Jobs of the killed supervisor the reaper returned on the new primary. */
  reapedOfKilled: number;
  /** The killed supervisor's jobs running at the crash (per the task's own lines). */
  runningOnKilled: number;
  resumeAfterRetargetMs: number;
  readyz503DuringOutage: boolean;
  readyz200AfterRetargetMs: number;
  listenerBackAfterRetargetMs: number;
  pickupAfterMs: number[];
  allDoneAfterRetargetMs: number;
  /** Committed jobs (per the producer) not done at the end. */
  notDone: number;
}

export async function failoverScenario(replication: 'synchronous' | 'asynchronous'): Promise<FailoverResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-failover-'));
  const runLog = path.join(dir, 'runs.log');
  const servers: ChaosPostgres[] = [];
  const supervisors: SpawnedSupervisor[] = [];
  const pools: pg.Pool[] = [];
  let proxy: Proxy | undefined;
  try {
    const primary = await startChaosPostgres();
    servers.push(primary);
    const url = await createMigratedDatabase(primary, 'chaos_failover');
    const standby = await startStandby(primary);
    servers.push(standby);
    if (replication === 'synchronous') await makeSynchronous(primary);
    proxy = await startProxy({ port: primary.port });
    const endpoint = proxy.urlFor(url);
    for (let i = 0; i < 2; i++)
      supervisors.push(
        await spawnSupervisor({
          databaseUrl: endpoint,
          tasksDir: FIXTURE_TASKS,
          env: { LOG_LEVEL: 'debug' },
          config: {
            pool: { maxThreads: 2, dbPoolSize: 1 },
            queues: { default: { concurrency: 10, jobsPerThread: 10 } },
            jobs: { lease: '5s', maxAttempts: 25 },
            reaper: { interval: '500ms' },
            poll: { interval: '30s' },
            backoff: { base: '100ms', max: '1s' },
          },
          readyTimeoutMs: 60_000,
        }),
      );
    const [survivor, victim] = supervisors as [SpawnedSupervisor, SpawnedSupervisor];

    // The producer: batches through the endpoint; an id counts once its commit returned.
    const producerPool = new pg.Pool({ connectionString: endpoint, max: 2, connectionTimeoutMillis: 3000 });
    producerPool.on('error', () => {});
    pools.push(producerPool);
    const committed: string[] = [];
    let producing = true;
    let failures = 0;
    const producer = (async () => {
      let i = 0;
      while (producing) {
        try {
          const pending = await count(
            producerPool,
            "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'pending'",
          );
          // Load shaping, not synchronisation: keep a backlog of a few hundred jobs.
          if (pending > 300) {
            await new Promise((r) => setTimeout(r, 20));
            continue;
          }
          const rows = await enqueueMany(
            producerPool,
            Array.from({ length: 50 }, () => ({
              kind: 'failover_run',
              payload: { ms: 20 + (i++ % 7) * 30, log: runLog },
            })),
          );
          committed.push(...rows.map((r) => r.id));
        } catch {
          failures++;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    })();

    const readyz = (s: SpawnedSupervisor) => httpGet(s.metricsPort, '/readyz', 2500);
    const runningOn = (pid: number) => {
      const runs = runsOf(runLog);
      let n = 0;
      for (const list of runs.values()) n += list.filter((r) => r.pid === pid && r.end === undefined).length;
      return n;
    };
    const victimPid = (victim.logs.find((l) => l.msg === 'ready')?.pid as number | undefined) ?? victim.pid;
    await until(
      'a burst under way',
      () => committed.length,
      (n) => n >= 1000,
      60_000,
    );
    await until(
      'the victim runs jobs',
      () => runningOn(victimPid),
      (n) => n >= 3,
      30_000,
      5,
    );

    // The crash: a supervisor and the primary at once.
    const killedAt = performance.timeOrigin + performance.now();
    const runningOnKilled = runningOn(victimPid);
    victim.child.kill('SIGKILL');
    const mark = survivor.logs.length;
    await primary.stop('immediate');
    const notReady = await until(
      'readyz 503 during the outage',
      () => readyz(survivor),
      (r) => r.status === 503,
      15_000,
      50,
    );
    await standby.promote();
    proxy.retarget({ port: standby.port });
    const retargetAt = Date.now();
    const direct = new pg.Pool({ connectionString: standby.urlOf('chaos_failover'), max: 2 });
    direct.on('error', () => {});
    pools.push(direct);
    await until(
      'claims resume on the new primary',
      () =>
        count(direct, 'SELECT count(*)::int AS n FROM jobvisor.jobs WHERE started_at >= to_timestamp($1 / 1000.0)', [
          retargetAt,
        ]),
      (n) => n > 0,
      30_000,
      20,
    );
    const resumeMs = Date.now() - retargetAt;
    await until(
      'readyz 200 after the failover',
      () => readyz(survivor),
      (r) => r.status === 200,
      30_000,
      50,
    );
    const readyMs = Date.now() - retargetAt;
    await survivor.waitForLog(/^listener reconnected$/, 30_000, () => survivor.logs.length > mark);
    const listenMs = Date.now() - retargetAt;
    const afterFailover = committed.length;
    await until(
      'the producer commits on the new primary',
      () => committed.length,
      (n) => n >= afterFailover + 200,
      30_000,
    );
    producing = false;
    await producer;

    const ids = [...new Set(committed)];
    const present = await count(direct, 'SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1)', [ids]);
    await until(
      'every job the new primary has is done',
      () => count(direct, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status <> 'done'"),
      (n) => n === 0,
      90_000,
      100,
    );
    const allDoneMs = Date.now() - retargetAt;

    // LISTEN works: plain INSERTs start at once although the poll interval is 30 s.
    const pickups: number[] = [];
    for (let i = 0; i < 3; i++)
      pickups.push(
        await pickupMs(direct, { kind: 'failover_run', payload: { ms: 0, log: runLog }, timeoutMs: 30_000 }),
      );

    const told = new Set<string>();
    for (const s of supervisors)
      for (const l of s.logs) if (l.msg === 'job completed' && typeof l.jobId === 'string') told.add(l.jobId);
    const notDoneTold = await count(
      direct,
      "SELECT count(*)::int AS n FROM unnest($1::bigint[]) AS t(id) LEFT JOIN jobvisor.jobs j USING (id) WHERE j.status IS DISTINCT FROM 'done'",
      [[...told]],
    );
    const victimOwner = `:${victimPid}:`;
    const reaped = survivor.logs
      .slice(mark)
      .filter((l) => l.msg === 'expired leases reaped')
      .flatMap((l) => (l.jobs as Array<{ owner: string | null }>) ?? [])
      .filter((j) => String(j.owner).includes(victimOwner)).length;
    const runs = runsOf(runLog);
    let reRuns = 0;
    for (const list of runs.values()) if (list.length > 1) reRuns++;
    const notDone = await count(
      direct,
      "SELECT count(*)::int AS n FROM unnest($1::bigint[]) AS t(id) LEFT JOIN jobvisor.jobs j USING (id) WHERE j.status IS DISTINCT FROM 'done'",
      [ids],
    );
    return {
      replication,
      committed: ids.length,
      lostEnqueues: ids.length - present,
      lostOutcomes: notDoneTold,
      concurrentRuns: overlaps(runs, victimPid, killedAt),
      reRuns,
      reapedOfKilled: reaped,
      runningOnKilled,
      resumeAfterRetargetMs: resumeMs,
      readyz503DuringOutage: notReady.status === 503,
      readyz200AfterRetargetMs: readyMs,
      listenerBackAfterRetargetMs: listenMs,
      pickupAfterMs: pickups,
      allDoneAfterRetargetMs: allDoneMs,
      notDone,
      ...(failures > 0 && { producerFailures: failures }),
    };
  } finally {
    await Promise.all(supervisors.map((s) => s.stop('SIGKILL').catch(() => {})));
    await Promise.all(pools.map((p) => p.end().catch(() => {})));
    await proxy?.close();
    await Promise.all(servers.map((s) => s.destroy()));
    rmSync(dir, { recursive: true, force: true });
  }
}
