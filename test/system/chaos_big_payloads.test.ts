/**
 * Chaos: big payloads. 1,200 jobs of 900 KB each (under jobs.maxPayloadBytes,
 * 1 MiB) through two supervisor processes configured as a user's first file
 * (config/example.first.json: one queue, concurrency 50; every other value the
 * default, so a 15 s lease renewed every 5 s). Every job is done, no lease is
 * lost, and no job starts a second time (max attempts 2, so a second start would
 * still end `done` and hide behind the count).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { count, httpGet, report, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { assertDrains, killAll, spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const JOBS = 1200;
/** Characters of the payload's blob: with the JSON around it, about 900 KB. */
const BLOB = 900_000;
const FIRST_CONFIG = JSON.parse(
  readFileSync(new URL('../../config/example.first.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

let db: TestDatabase;
const spawned: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('chaos_big_payloads');
  await db.pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
});

after(async () => {
  await killAll(spawned);
  await db.drop();
});

/** Longest event-loop lag a supervisor's /metrics reports (prom-client's nodejs_eventloop_lag_max_seconds). */
async function lagMaxMs(s: SpawnedSupervisor): Promise<number> {
  const body = await httpGet(s.metricsPort, '/metrics');
  const m = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(body.body);
  return m ? Math.round(Number(m[1]) * 1000) : Number.NaN;
}

describe('big payloads', () => {
  it(
    '1,200 jobs of 900 KB through two supervisors with the first config: no lease lost, none started twice',
    { timeout: 900_000 },
    async () => {
      for (let i = 0; i < 2; i++)
        spawned.push(
          await spawnSupervisor({
            databaseUrl: db.url,
            tasksDir: FIXTURE_TASKS,
            config: FIRST_CONFIG,
            readyTimeoutMs: 60_000,
          }),
        );
      const started = Date.now();
      // One statement: both supervisors are woken by its notification at once. The blob
      // repeats a 32-character text, so the table stays small (TOAST compresses it),
      // while each claim still carries 900 KB of JSON text per job.
      await db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, payload, max_attempts)
       SELECT 'chaos_run', jsonb_build_object('ms', 20, 'blob', repeat(md5(i::text), $2 / 32)), 2
         FROM generate_series(1, $1::int) AS i`,
        [JOBS, BLOB],
      );
      // The figures are reported even when the jobs miss the deadline, so a failing run
      // still says how many leases it lost on the way.
      const missed = await until(
        'every job finished',
        () => count(db.pool, "SELECT count(*) AS n FROM jobvisor.jobs WHERE status IN ('done', 'failed')"),
        (n) => n === JOBS,
        780_000,
        250,
      ).then(
        () => undefined,
        (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
      );
      const seconds = (Date.now() - started) / 1000;
      const lost = spawned.flatMap((s) => s.logs.filter((l) => l.msg === 'lease lost, job stopped'));
      const reaped = spawned.flatMap((s) => s.logs.filter((l) => l.msg === 'expired leases reaped'));
      const twice = await count(
        db.pool,
        'SELECT count(*) AS n FROM (SELECT job_id FROM chaos_runs GROUP BY job_id HAVING count(*) > 1) AS t',
      );
      const secondAttempts = await count(db.pool, 'SELECT count(*) AS n FROM jobvisor.jobs WHERE attempts > 1');
      const lag = await Promise.all(spawned.map(lagMaxMs));
      report('big payloads', {
        jobs: JOBS,
        payloadBytes: BLOB,
        seconds,
        lostLeases: lost.reduce((n, l) => n + (l.jobIds as string[]).length, 0),
        reapedLines: reaped.length,
        secondAttempts,
        startedTwice: twice,
        eventLoopLagMaxMs: lag,
        finishedInTime: missed === undefined,
      });
      if (missed !== undefined) throw missed;
      assert.equal(await count(db.pool, "SELECT count(*) AS n FROM jobvisor.jobs WHERE status = 'done'"), JOBS);
      assert.deepEqual(
        { lost: lost.length, reaped: reaped.length, secondAttempts, startedTwice: twice },
        { lost: 0, reaped: 0, secondAttempts: 0, startedTwice: 0 },
      );
      await Promise.all(spawned.map(assertDrains));
    },
  );
});
