/**
 * Chaos: PostgreSQL restarts (immediate: a crash) while jobs sleep and wait,
 * on a server of this file's own, with one supervisor process reaching it
 * through a TCP proxy. The proxy is cut first (the supervisor's connections
 * hang, new ones are never forwarded), the server crashes and comes back, and
 * the waiters' signals are committed in one transaction as soon as it is back,
 * while the supervisor is still cut off: it cannot have reconnected yet. The
 * sleepers' wake time passes during the outage. Then the proxy heals.
 *   - every job ends done;
 *   - every job wakes once: the run past its sleep or wait happens once per job
 *     (logged from inside the task), and the steps before it never run again;
 *   - every waiter received its signal (none timed out, none lost).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { count, report, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { startProxy, type Proxy } from '../helpers/chaos/proxy.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const SLEEPERS = 100;
const WAITERS = 100;

let server: ChaosPostgres;
let proxy: Proxy;
let url: string;
let pool: pg.Pool;
let supervisor: SpawnedSupervisor | undefined;

before(async () => {
  server = await startChaosPostgres();
  url = await createMigratedDatabase(server, 'steps_restart');
  proxy = await startProxy({ port: server.port });
  pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  await pool.query('CREATE TABLE step_calls (job_id bigint, name text, attempt int, key text)');
});

after(async () => {
  await supervisor?.stop('SIGKILL');
  await pool?.end().catch(() => {});
  await proxy?.close();
  await server?.destroy();
});

const calls = (name: string, ids: string[]) =>
  count(pool, 'SELECT count(*)::int AS n FROM step_calls WHERE name = $1 AND job_id = ANY($2)', [name, ids]);

describe('chaos: PostgreSQL restart while jobs sleep and wait', { timeout: 240_000 }, () => {
  it('a signal committed before the supervisor reconnects: nothing lost, every job wakes once', async () => {
    supervisor = await spawnSupervisor({
      databaseUrl: proxy.urlFor(url),
      tasksDir: FIXTURE_TASKS,
      config: {
        pool: { maxThreads: 1, dbPoolSize: 4 },
        queues: { default: { concurrency: 50, jobsPerThread: 50 } },
        jobs: { lease: '10s', maxAttempts: 5 },
        reaper: { interval: '300ms' },
        poll: { interval: '500ms' },
        backoff: { base: '100ms', max: '1s' },
      },
      readyTimeoutMs: 60_000,
    });
    // The sleepers' wake time: after they are all asleep, before the outage ends.
    const wakeAt = new Date(Date.now() + 20_000);
    const sleep = (i: number) => ({
      kind: 'durable',
      payload: {
        log: true,
        ops: [
          ['step', 'a'],
          ['sleep', 'nap', `@${wakeAt.toISOString()}`],
          ['pause', 'woke', 0],
          ['step', 'c'],
        ],
        i,
      },
    });
    const wait = (i: number) => ({
      kind: 'durable',
      payload: {
        log: true,
        ops: [
          ['step', 'a'],
          ['wait', 'go', '1h'],
          ['pause', 'woke', 0],
          ['step', 'c'],
        ],
        i,
      },
    });
    const sleepers = (
      await enqueueMany(
        pool,
        Array.from({ length: SLEEPERS }, (_, i) => sleep(i)),
      )
    ).map((r) => r.id);
    const waiters = (
      await enqueueMany(
        pool,
        Array.from({ length: WAITERS }, (_, i) => wait(i)),
      )
    ).map((r) => r.id);
    const all = [...sleepers, ...waiters];
    await until(
      'every job asleep or waiting',
      () =>
        count(
          pool,
          `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1)
              AND (status = 'waiting' OR (status = 'pending' AND run_at > now()))`,
          [all],
        ),
      (n) => n === all.length,
      Math.max(1000, wakeAt.getTime() - Date.now() - 2000),
      100,
    );

    proxy.cut();
    const downAt = Date.now();
    await server.stop('immediate');
    await pool.end();
    // Down until the sleepers' wake time has passed.
    await new Promise((r) => setTimeout(r, Math.max(0, wakeAt.getTime() - Date.now() + 500)));
    await server.start();
    pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 5000 });
    pool.on('error', () => {});
    // Back, the supervisor still cut off: the signals commit, in one transaction.
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ outcome: string }>(
        `SELECT jobvisor.signal(id, 'go', '{"ok": true}') AS outcome FROM unnest($1::bigint[]) AS id`,
        [waiters],
      );
      await client.query('COMMIT');
      assert.deepEqual([...new Set(rows.map((r) => r.outcome))], ['woke'], 'every waiter was waiting');
    } finally {
      client.release();
    }
    const signalledAt = Date.now();
    const touchedWhileCut = await count(
      pool,
      "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status NOT IN ('pending', 'waiting')",
      [all],
    );
    assert.equal(touchedWhileCut, 0, 'no job moved while the supervisor was cut off');
    proxy.heal();
    const healedAt = Date.now();
    await until(
      'every job done',
      () => count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [all]),
      (n) => n === all.length,
      120_000,
      200,
    );
    const doneMs = Date.now() - healedAt;

    assert.equal(await calls('a', all), all.length, 'a step recorded before the outage never ran again');
    assert.equal(await calls('woke', all), all.length, 'every job woke once');
    assert.equal(await calls('c', all), all.length, 'c ran once per job');
    const { rows: results } = await pool.query<{ r: unknown }>(
      `SELECT result AS r FROM jobvisor.job_steps WHERE kind = 'wait' AND job_id = ANY($1)`,
      [waiters],
    );
    assert.equal(results.length, WAITERS);
    for (const r of results) assert.deepEqual(r.r, { received: true, payload: { ok: true } });
    report('restart while sleeping and waiting', {
      sleepers: SLEEPERS,
      waiters: WAITERS,
      outageMs: healedAt - downAt,
      signalledBeforeHealMs: healedAt - signalledAt,
      doneAfterHealMs: doneMs,
    });
  });
});
