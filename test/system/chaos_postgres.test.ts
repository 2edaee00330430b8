/**
 * Chaos: PostgreSQL restarts mid-run, with a fast and with an immediate
 * (crash) shutdown, on a server of this file's own; and a fast restart while
 * an operator's LOCK TABLE holds every borrowed client of the supervisors'
 * limited queues and gauges, a dashboard and an app's COPY (restart_under_lock.ts). Two supervisor processes
 * work a backlog; the server goes away for a few seconds and comes back.
 *   - /readyz turns 503 while the database is away and 200 after; /healthz
 *     stays 200 (the process is alive, only its database is not);
 *   - database errors are logged, with backoff (no hot loop);
 *   - both supervisors reconnect, including LISTEN: with a 30 s poll interval,
 *     a job inserted after the restart starts at once;
 *   - every job ends done, and since the outage is shorter than the lease, no
 *     lease expires: heartbeats resume as soon as the database is back.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { count, httpGet, pickupMs, report, statusCounts, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { LIMITED_QUEUES, restartUnderLock } from '../helpers/chaos/restart_under_lock.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const OUTAGE_MS = 3000;
/** Well above the outage: a restart this short must not cost a single lease. */
const LEASE = '10s';
const JOBS = 3000;
/**
 * Jobs that run across the whole outage and past their first lease: only
 * heartbeats keep them. They end once LONG_MS has passed and the test has
 * said the database is back (a file), however slowly the machine reaches the
 * outage: a job that ended during it would fail on its own write.
 */
const LONG_JOBS = 10;
const LONG_MS = 14_000;
const gates = mkdtempSync(path.join(tmpdir(), 'chaos-postgres-'));

let server: ChaosPostgres;
let url: string;
let pool: pg.Pool;
const supervisors: SpawnedSupervisor[] = [];

before(async () => {
  server = await startChaosPostgres();
  url = await createMigratedDatabase(server, 'chaos_restart');
  pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  await pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
  for (let i = 0; i < 2; i++) {
    supervisors.push(
      await spawnSupervisor({
        databaseUrl: url,
        tasksDir: FIXTURE_TASKS,
        config: {
          pool: { maxThreads: 2, dbPoolSize: 4 },
          queues: {
            default: { concurrency: 20, jobsPerThread: 20 },
            long: { concurrency: 5, jobsPerThread: 5 },
            ...LIMITED_QUEUES,
          },
          jobs: { lease: LEASE, maxAttempts: 25 },
          reaper: { interval: '500ms' },
          poll: { interval: '30s' },
          backoff: { base: '100ms', max: '1s' },
        },
        readyTimeoutMs: 60_000,
      }),
    );
  }
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop('SIGKILL')));
  await pool?.end().catch(() => {});
  await server?.destroy();
  rmSync(gates, { recursive: true, force: true });
});

const readyz = (s: SpawnedSupervisor) => httpGet(s.metricsPort, '/readyz', 2500);
const healthz = (s: SpawnedSupervisor) => httpGet(s.metricsPort, '/healthz', 2500);

async function restartScenario(mode: 'fast' | 'immediate') {
  const logMark = supervisors.map((s) => s.logs.length);
  const reconnectsBefore = supervisors.map((s) => s.logs.filter((l) => l.msg === 'listener reconnected').length);
  const backFile = path.join(gates, `${mode}-back`);
  const longIds = (
    await enqueueMany(
      pool,
      Array.from({ length: LONG_JOBS }, () => ({
        kind: 'chaos_run',
        queue: 'long',
        payload: { ms: LONG_MS, untilFile: backFile },
      })),
    )
  ).map((r) => r.id);
  await until(
    'the long jobs run',
    () =>
      count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'running'", [longIds]),
    (n) => n === LONG_JOBS,
    30_000,
  );
  const ids = (
    await enqueueMany(
      pool,
      Array.from({ length: JOBS }, (_, i) => ({ kind: 'chaos_run', payload: { ms: 10 + (i % 40) } })),
    )
  ).map((r) => r.id);
  const doneOf = () =>
    count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [ids]);
  await until('a fifth of the jobs done', doneOf, (n) => n >= JOBS / 5, 60_000);
  const inFlight = await count(
    pool,
    "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'running'",
    [ids],
  );

  const downAt = Date.now();
  await server.stop(mode);
  const stoppedMs = Date.now() - downAt;
  const notReady = await Promise.all(
    supervisors.map(async (s) => {
      const r = await until(
        'readyz 503 while the database is away',
        () => readyz(s),
        (v) => v.status === 503,
        15_000,
        100,
      );
      return { afterMs: Date.now() - downAt, body: r.body };
    }),
  );
  const alive = await Promise.all(supervisors.map(healthz));
  // The outage itself: the server stays down this long (the fault being injected).
  const outageEnds = downAt + OUTAGE_MS;
  await until(
    'outage over',
    () => Date.now(),
    (now) => now >= outageEnds,
    OUTAGE_MS + 1000,
    100,
  );
  const upAt = Date.now();
  await server.start();
  const startedMs = Date.now() - upAt;
  const readyAgainMs = await Promise.all(
    supervisors.map(async (s) => {
      await until(
        'readyz 200 after the restart',
        () => readyz(s),
        (v) => v.status === 200,
        30_000,
        100,
      );
      return Date.now() - upAt;
    }),
  );
  const relistenMs = await Promise.all(
    supervisors.map(async (s, i) => {
      await until(
        'listener reconnected',
        () => s.logs.filter((l) => l.msg === 'listener reconnected').length,
        (n) => n > (reconnectsBefore[i] as number),
        30_000,
        100,
      );
      return Date.now() - upAt;
    }),
  );
  writeFileSync(backFile, '');
  await until(`all ${JOBS} jobs done after the ${mode} restart`, doneOf, (n) => n === JOBS, 90_000, 200);
  const allDoneMs = Date.now() - upAt;
  const longRows = await until(
    'the long jobs done',
    async () =>
      (await pool.query('SELECT status, attempts, errors FROM jobvisor.jobs WHERE id = ANY($1)', [longIds])).rows,
    (rows) => rows.every((r) => r.status === 'done'),
    LONG_MS + 30_000,
    200,
  );
  const longRuns = await count(pool, 'SELECT count(*)::int AS n FROM chaos_runs WHERE job_id = ANY($1)', [longIds]);

  // LISTEN works again: a plain INSERT starts at once although the poll interval is 30 s.
  const pickups: number[] = [];
  for (let i = 0; i < 3; i++) pickups.push(await pickupMs(pool));

  const statuses = await statusCounts(pool, 'id = ANY($1)', [ids]);
  const reRuns = await count(
    pool,
    'SELECT (count(*) - count(DISTINCT job_id))::int AS n FROM chaos_runs WHERE job_id = ANY($1)',
    [ids],
  );
  const ran = await count(pool, 'SELECT count(DISTINCT job_id)::int AS n FROM chaos_runs WHERE job_id = ANY($1)', [
    ids,
  ]);
  const errors = (
    await pool.query<{ error: string; n: number }>(
      "SELECT regexp_replace(e ->> 'error', '[0-9]+', 'N', 'g') AS error, count(*)::int AS n FROM jobvisor.jobs, jsonb_array_elements(errors) e WHERE id = ANY($1) GROUP BY 1 ORDER BY 2 DESC",
      [ids],
    )
  ).rows;
  const expired = errors.filter((e) => e.error.startsWith('lease expired')).reduce((n, e) => n + e.n, 0);
  const newLogs = supervisors.map((s, i) => s.logs.slice(logMark[i]));
  const dbErrorLines = newLogs.map((lines) => lines.filter((l) => l.msg === 'database error').length);
  const loops = [
    ...new Set(
      newLogs
        .flat()
        .filter((l) => l.msg === 'database error')
        .map((l) => String(l.loop)),
    ),
  ].sort();
  const leaked = newLogs.flat().filter((l) => JSON.stringify(l).includes(server.password)).length;
  const longestLine = Math.max(...newLogs.flat().map((l) => JSON.stringify(l).length));

  report(`postgres-restart.${mode}`, {
    jobs: JOBS,
    runningAtStop: inFlight,
    stopMs: stoppedMs,
    outageMs: OUTAGE_MS,
    startMs: startedMs,
    readyz503AfterMs: notReady.map((r) => r.afterMs),
    readyz503Body: notReady[0]?.body,
    healthzWhileDown: alive.map((a) => a.status),
    readyz200AfterStartMs: readyAgainMs,
    listenerBackAfterStartMs: relistenMs,
    allDoneAfterStartMs: allDoneMs,
    pickupAfterMs: pickups,
    statuses,
    longJobs: { jobs: LONG_JOBS, runMs: LONG_MS, attempts: longRows.map((r) => r.attempts), runs: longRuns },
    reRuns,
    attemptErrors: errors,
    dbErrorLogLines: dbErrorLines,
    dbErrorLoops: loops,
    longestLogLine: longestLine,
  });

  assert.ok(
    notReady.every((r) => /database unreachable/.test(r.body)),
    `503 says why: ${notReady[0]?.body}`,
  );
  assert.deepEqual(
    alive.map((a) => a.status),
    [200, 200],
    '/healthz stays 200 while the database is away',
  );
  assert.ok(
    supervisors.every((s) => s.child.exitCode === null && s.child.signalCode === null),
    'both supervisors survived',
  );
  assert.deepEqual(statuses, { done: JOBS }, 'every job done, none lost');
  assert.equal(ran, JOBS, 'every job ran');
  assert.ok(Math.max(...pickups) < 1500, `pickup after the restart ${JSON.stringify(pickups)} ms (poll interval 30 s)`);
  // Backoff, not a hot loop: a few seconds of outage is at most a few dozen lines per supervisor.
  assert.ok(Math.max(...dbErrorLines) < 200, `database error lines per supervisor: ${dbErrorLines.join(', ')}`);
  assert.equal(leaked, 0, 'no log line contains the database password');
  // Clear logs: an error is its message, code and stack, not the kilobytes of a pg Client attached to it.
  assert.ok(longestLine < 2048, `longest log line ${longestLine} bytes`);
  assert.deepEqual(
    longRows.map((r) => r.attempts),
    longIds.map(() => 1),
    `jobs running across the outage kept their leases: ${JSON.stringify(longRows.flatMap((r) => r.errors))}`,
  );
  assert.equal(longRuns, LONG_JOBS, 'and ran once each');
  assert.equal(
    expired,
    0,
    `an outage of ${OUTAGE_MS} ms expired ${expired} leases of ${LEASE}: heartbeats did not resume in time`,
  );
}

describe('chaos: PostgreSQL restarts', () => {
  it('fast shutdown mid-run: readyz 503 then 200, LISTEN back, all jobs done', () => restartScenario('fast'));
  it('immediate shutdown (crash recovery) mid-run: readyz 503 then 200, LISTEN back, all jobs done', () =>
    restartScenario('immediate'));
  it('fast restart behind an operator LOCK TABLE: limited claims, gauges, a dashboard page and a COPY enqueueMany out; every process survives', async () => {
    const result = await restartUnderLock({ server, url, pool, supervisors });
    report('postgres-restart.under-lock', result);
    assert.deepEqual(result.supervisorsAlive, [true, true], 'both supervisors survived');
    assert.equal(result.dashboardAlive, true, 'the dashboard survived');
    const app = result.app as { exit: unknown };
    assert.deepEqual(app.exit, { code: 0, signal: null }, `the app survived and enqueued: ${JSON.stringify(app)}`);
    assert.deepEqual(result.appJobs, { rows: 1000, distinct: 1000 }, 'the 1,000 jobs enqueued once');
    assert.equal(result.unhandled, 0, "no Unhandled 'error' event");
    assert.deepEqual(Object.keys(result.statuses as object), ['done'], 'every job done');
  });
});
