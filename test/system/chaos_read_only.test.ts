/**
 * Chaos: the endpoint reaches a read-only server. Two supervisor processes
 * reach a primary through a TCP proxy (the Kubernetes Service); the proxy is
 * then pointed at a streaming standby and every connection cut (the old
 * primary restarted as a standby looks the same from the supervisors' side),
 * and later pointed back at the primary without cutting anything.
 *   - supervisors see 25006 / "cannot execute LISTEN during recovery" for what
 *     they are: one log line each, /readyz 503 naming the read-only server, a
 *     gauge at 1;
 *   - they keep no connection to the standby once the endpoint leads to the
 *     primary again (nothing is retried on it);
 *   - they recover by themselves: jobs enqueued meanwhile start within seconds
 *     although the poll interval is 30 s, LISTEN is back, /readyz is 200, and the
 *     failover is counted with the time spent without a writable primary.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { clockPasses, count, httpGet, pickupMs, report, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { startProxy, type Proxy } from '../helpers/chaos/proxy.ts';
import { caughtUp, startStandby } from '../helpers/chaos/standby.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

/** Long enough for every backoff of today's loops to grow past a few seconds. */
const READ_ONLY_MS = 8000;
const READ_ONLY_LINE = /^database server is read-only/;

let primary: ChaosPostgres;
let standby: ChaosPostgres;
let proxy: Proxy;
let url: string;
let pool: pg.Pool;
const supervisors: SpawnedSupervisor[] = [];

before(async () => {
  primary = await startChaosPostgres();
  url = await createMigratedDatabase(primary, 'chaos_read_only');
  pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  await pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
  standby = await startStandby(primary);
  proxy = await startProxy({ port: primary.port });
  for (let i = 0; i < 2; i++) {
    supervisors.push(
      await spawnSupervisor({
        databaseUrl: proxy.urlFor(url),
        tasksDir: FIXTURE_TASKS,
        config: {
          pool: { maxThreads: 2, dbPoolSize: 2 },
          queues: { default: { concurrency: 10, jobsPerThread: 10 } },
          poll: { interval: '30s' },
          jobs: { lease: '15s' },
        },
        readyTimeoutMs: 60_000,
      }),
    );
  }
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop('SIGKILL')));
  await pool?.end().catch(() => {});
  await proxy?.close();
  await standby?.destroy();
  await primary?.destroy();
});

const readyz = (s: SpawnedSupervisor) => httpGet(s.metricsPort, '/readyz', 2500);
async function metric(s: SpawnedSupervisor, name: string): Promise<number> {
  const { body } = await httpGet(s.metricsPort, '/metrics', 5000);
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : Number.NaN;
}
const doneOf = (ids: string[]) =>
  count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [ids]);

describe('chaos: the endpoint reaches a read-only server', () => {
  it('says so once, keeps nothing of the standby, and recovers by itself when the primary is back', async () => {
    const warm = (
      await enqueueMany(
        pool,
        Array.from({ length: 20 }, () => ({ kind: 'chaos_run', payload: {} })),
      )
    ).map((r) => r.id);
    await until(
      'warm-up done',
      () => doneOf(warm),
      (n) => n === warm.length,
      30_000,
    );
    const logMark = supervisors.map((s) => s.logs.length);

    // The endpoint now leads to the standby, and every open connection is cut.
    await caughtUp(primary, standby);
    proxy.retarget({ port: standby.port });
    const awayAt = Date.now();
    proxy.drop(() => true);
    const ids = (
      await enqueueMany(
        pool,
        Array.from({ length: 50 }, () => ({ kind: 'chaos_run', payload: {} })),
      )
    ).map((r) => r.id);
    const saidAfterMs = await Promise.all(
      supervisors.map(async (s) => {
        await s.waitForLog(READ_ONLY_LINE, 20_000);
        return Date.now() - awayAt;
      }),
    );
    const notReady = await Promise.all(
      supervisors.map((s) =>
        until(
          'readyz 503 naming the read-only server',
          () => readyz(s),
          (r) => r.status === 503 && /read-only/.test(r.body),
          15_000,
          100,
        ),
      ),
    );
    const gaugeWhileAway = await Promise.all(supervisors.map((s) => metric(s, 'jobvisor_database_read_only')));
    await clockPasses('the endpoint stays on the standby', READ_ONLY_MS - (Date.now() - awayAt), 100);
    const ranWhileAway = await doneOf(ids);

    // Back to the primary; nothing is cut: the supervisors must leave the standby themselves.
    proxy.retarget({ port: primary.port });
    const backAt = Date.now();
    await until(
      'jobs enqueued meanwhile done',
      () => doneOf(ids),
      (n) => n === ids.length,
      60_000,
      50,
    );
    const firstStartMs =
      Number(
        (
          await pool.query(
            'SELECT extract(epoch FROM min(started_at)) * 1000 AS ms FROM jobvisor.jobs WHERE id = ANY($1)',
            [ids],
          )
        ).rows[0].ms,
      ) - backAt;
    const allDoneMs = Date.now() - backAt;
    const readyAgainMs = await Promise.all(
      supervisors.map(async (s) => {
        await until(
          'readyz 200 again',
          () => readyz(s),
          (r) => r.status === 200,
          15_000,
          100,
        );
        return Date.now() - backAt;
      }),
    );
    await Promise.all(supervisors.map((s) => s.waitForLog(/^writable primary reached$/, 15_000)));
    const onStandby = await until(
      'no supervisor connection left on the standby',
      () => proxy.connections().filter((c) => c.targetPort === standby.port && !c.closed).length,
      (n) => n === 0,
      10_000,
      100,
    );

    // LISTEN is back: a plain INSERT starts at once although the poll interval is 30 s.
    const pickups: number[] = [];
    for (let i = 0; i < 3; i++) pickups.push(await pickupMs(pool));
    const failovers = await Promise.all(supervisors.map((s) => metric(s, 'jobvisor_database_failovers_total')));
    const unwritable = await Promise.all(
      supervisors.map((s) => metric(s, 'jobvisor_database_unwritable_seconds_total')),
    );
    const gaugeAfter = await Promise.all(supervisors.map((s) => metric(s, 'jobvisor_database_read_only')));
    const newLogs = supervisors.map((s, i) => s.logs.slice(logMark[i]));
    const readOnlyLines = newLogs.map((lines) => lines.filter((l) => READ_ONLY_LINE.test(String(l.msg))).length);
    const retriedLines = newLogs.map(
      (lines) => lines.filter((l) => l.msg === 'database error' && /recovery|read-only/.test(JSON.stringify(l))).length,
    );

    report('read-only-endpoint', {
      readOnlyMs: READ_ONLY_MS,
      saidAfterMs,
      readyz503Body: notReady[0]?.body,
      firstStartAfterBackMs: Math.round(firstStartMs),
      allDoneAfterBackMs: allDoneMs,
      readyz200AfterBackMs: readyAgainMs,
      pickupAfterMs: pickups,
      failovers,
      unwritableSeconds: unwritable,
      readOnlyLogLines: readOnlyLines,
    });

    assert.equal(ranWhileAway, 0, 'nothing ran while the endpoint led to the standby');
    assert.deepEqual(readOnlyLines, [1, 1], 'one log line per supervisor says the server is read-only');
    assert.deepEqual(retriedLines, [0, 0], 'no "database error" line per failed round on the standby');
    assert.deepEqual(gaugeWhileAway, [1, 1], 'jobvisor_database_read_only is 1 while on the standby');
    assert.deepEqual(gaugeAfter, [0, 0], 'and 0 after');
    assert.equal(onStandby, 0);
    assert.ok(firstStartMs < 3000, `first job started ${Math.round(firstStartMs)} ms after the primary was back`);
    assert.ok(Math.max(...pickups) < 1500, `LISTEN back: pickups ${JSON.stringify(pickups)} ms (poll 30 s)`);
    assert.deepEqual(failovers, [1, 1], 'one failover counted per supervisor');
    assert.ok(
      unwritable.every((s) => s >= (READ_ONLY_MS - 2000) / 1000),
      `time without a writable primary counted: ${unwritable.join(', ')} s`,
    );
  });
});
