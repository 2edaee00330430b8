/**
 * Chaos: a pause issued the moment PostgreSQL answers again after an outage.
 * Two supervisor processes work a backlog of `mail`; the server (of this
 * file's own) stops for 10 s, long enough for the pause read and the listener
 * to back off, and starts again; `pauseQueue('mail')` commits as soon as a
 * connection succeeds. No job claimed after the pause committed may start:
 * the fetchers read the pause state again before their first claim once the
 * database answers (src/supervisor/loops/pause_watch.ts beforeClaim). Jobs claimed
 * before it may still start.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { pauseQueue } from '../../src/queue/pause.ts';
import { count, report, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { createRunsTable } from '../helpers/flow.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const OUTAGE_MS = 10_000;
const JOBS = 600;
const CONCURRENCY = 5;

let server: ChaosPostgres;
let url: string;
let pool: pg.Pool;
const supervisors: SpawnedSupervisor[] = [];

before(async () => {
  server = await startChaosPostgres();
  url = await createMigratedDatabase(server, 'chaos_pause');
  pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  await createRunsTable(pool);
  for (let i = 0; i < 2; i++) {
    supervisors.push(
      await spawnSupervisor({
        databaseUrl: url,
        tasksDir: FIXTURE_TASKS,
        config: {
          pool: { maxThreads: 1, dbPoolSize: 4 },
          queues: { mail: { concurrency: CONCURRENCY, jobsPerThread: CONCURRENCY } },
          jobs: { lease: '30s', maxAttempts: 25 },
          poll: { interval: '500ms' },
          backoff: { base: '100ms', max: '500ms' },
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
});

/** Pauses `mail` on a fresh connection, trying again until the server takes it. */
async function pauseAsSoonAsItAnswers(): Promise<{ tries: number; pausedAt: Date }> {
  for (let tries = 1; ; tries++) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await pauseQueue(client, 'mail');
      // Read after the commit: every claim that began before this could not have seen the pause.
      const { rows } = await client.query<{ at: Date }>('SELECT clock_timestamp() AS at');
      return { tries, pausedAt: rows[0]?.at as Date };
    } catch {
      if (tries > 200) throw new Error('the server did not take the pause');
    } finally {
      await client.end().catch(() => {});
    }
  }
}

describe('chaos: a pause right after an outage', () => {
  it('no job claimed after the pause committed starts, though the listener and the pause read are backing off', async () => {
    await enqueueMany(
      pool,
      Array.from({ length: JOBS }, () => ({ kind: 'flow_record', queue: 'mail', payload: { ms: 100 } })),
    );
    await until(
      'a sixth of the backlog done',
      () => count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'"),
      (n) => n >= JOBS / 6,
      60_000,
    );
    const downAt = Date.now();
    await server.stop('fast');
    // The outage itself: the fault being injected.
    await until(
      'outage over',
      () => Date.now(),
      (now) => now >= downAt + OUTAGE_MS,
      OUTAGE_MS + 1000,
      100,
    );
    await server.start();
    const upAt = Date.now();
    const { tries, pausedAt } = await pauseAsSoonAsItAnswers();
    const pauseAfterStartMs = Date.now() - upAt;
    // Every supervisor answers again (and so has had every chance to claim) before counting.
    await Promise.all(supervisors.map((s) => s.waitForLog(/^listener reconnected$/, 30_000)));
    await until(
      'the fleet quiet on mail',
      () => count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'mail' AND status = 'running'"),
      (n) => n === 0,
      30_000,
      100,
    );
    const { rows } = await pool.query<{ late: number; last_ms: number | null; before: number }>(
      `SELECT count(*) FILTER (WHERE j.started_at > $1)::int AS late,
              max(r.started - extract(epoch FROM $1::timestamptz) * 1000) FILTER (WHERE j.started_at > $1) AS last_ms,
              count(*) FILTER (WHERE j.started_at <= $1 AND r.started > extract(epoch FROM $1::timestamptz) * 1000)::int AS before
         FROM flow_runs r JOIN jobvisor.jobs j ON j.id = r.job_id
        WHERE r.started > extract(epoch FROM $1::timestamptz) * 1000 - 1`,
      [pausedAt],
    );
    const pending = await count(
      pool,
      "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'mail' AND status = 'pending'",
    );
    const result = {
      jobs: JOBS,
      outageMs: OUTAGE_MS,
      pauseTries: tries,
      pauseCommittedAfterStartMs: pauseAfterStartMs,
      startedAfterPause: {
        claimedAfter: rows[0]?.late,
        lastMsAfterPause: rows[0]?.last_ms,
        claimedBefore: rows[0]?.before,
      },
      pendingWhilePaused: pending,
      alive: supervisors.map((s) => s.child.exitCode === null),
    };
    report('pause-after-outage', result);
    // What may still start: a claim already on its way when the pause committed, before the
    // pause's NOTIFY reached its supervisor (the claim statement does not read the pause
    // itself). That is at most one claim round per supervisor, within a notification's
    // latency: measured 0 in four runs, and once 5 jobs, the last 95 ms after the pause. The
    // bug claimed 60–110 jobs for 4.3–9.4 s, with the pause read and LISTEN backing off.
    const oneRound = supervisors.length * CONCURRENCY;
    assert.ok(
      (rows[0]?.late ?? 0) <= oneRound && (rows[0]?.late === 0 || Number(rows[0]?.last_ms) < 1000),
      `jobs claimed after the pause committed started (at most one claim round, ${oneRound} jobs, within 1 s): ${JSON.stringify(result)}`,
    );
    assert.ok(pending > 0, 'the paused queue keeps its backlog');
  });
});
