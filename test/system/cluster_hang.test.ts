/**
 * Cluster mode, a hung supervisor process: its main thread in a synchronous
 * call that never returns (an instrumentation module preloaded with --import, as APM agents
 * are, with a bug SIGUSR2 triggers: fixtures/hang-preload.mjs), while its task
 * threads run on. With a lease of 10 s the bound is 5 s (hang_watch.ts): the
 * primary's /healthz names the silent process within seconds, the primary
 * SIGKILLs it at the bound, its running jobs are pending again within 1 s of
 * its exit (the reaper runs once a minute: only the hand-back can do that) and
 * run again elsewhere, and a new process takes its slot.
 *
 * Long synchronous task set-up is not a hang: a task module whose top level
 * blocks for longer than the bound runs in threads (the options thread at start,
 * a worker thread at its first job), never on the main thread.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { hangLimitMs, REPORT_SILENT_MS } from '../../src/cluster/hang_watch.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { isAlive, metricSum, spawnCluster, type SpawnedCluster } from '../helpers/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

const LEASE_MS = 10_000;
const LIMIT_MS = hangLimitMs(LEASE_MS);
const CONFIG = {
  pool: { maxThreads: 2 },
  queues: { default: { concurrency: 4, jobsPerThread: 4, prefetch: 0 } },
  jobs: { lease: `${LEASE_MS / 1000}s` },
  // Nothing here may come back through an expired lease.
  reaper: { interval: '60s' },
  poll: { interval: '200ms' },
  shutdown: { grace: '5s' },
};
const PRELOAD = path.join(FIXTURE_TASKS, '../hang-preload.mjs');

let db: TestDatabase;
let cluster: SpawnedCluster | undefined;

const count = async (sql: string, values: unknown[] = []) => (await db.pool.query(sql, values)).rows[0].n as number;
const healthz = async (c: SpawnedCluster) =>
  (await (await fetch(`http://127.0.0.1:${c.metricsPort}/healthz`)).json()) as {
    status: string;
    hung: Array<{ child: number; pid: number; silentMs: number; killAtMs: number }>;
    lastKilled?: { child: number; pid: number; silentMs: number; at: string };
  };

before(async () => {
  db = await createTestDatabase('cluster_hang');
  await db.pool.query(
    'CREATE TABLE executions (job_id bigint, attempt int, pid int, finished boolean DEFAULT false, at timestamptz DEFAULT clock_timestamp())',
  );
});

afterEach(async () => {
  const c = cluster;
  cluster = undefined;
  if (c) {
    const pids = c.childPids();
    assert.equal(await c.stop('SIGTERM'), 0, 'the cluster drains and exits 0');
    for (const pid of pids) assert.equal(isAlive(pid), false, `supervisor process ${pid} is gone`);
  }
  await db.pool.query('DELETE FROM jobvisor.jobs; TRUNCATE executions');
});

after(() => db.drop());

describe('cluster: a hung supervisor process', () => {
  it('a main thread that never returns: /healthz names it, killed at the bound, its jobs back at once, replaced', async () => {
    assert.equal(LIMIT_MS, 5000);
    const c = (cluster = await spawnCluster(2, {
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: CONFIG,
      env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${PRELOAD}`.trim() },
    }));
    const [survivor, victim] = [c.childPids(0)[0] as number, c.childPids(1)[0] as number];
    // Both claim, and each has run jobs already: its threads are up, so a job it claims is in a thread at once.
    for (const slot of [0, 1]) await c.waitForLog(/^ready$/, 90_000, (l) => l.child === slot);
    const record = (n: number, ms: number) =>
      enqueueMany(
        db.pool,
        Array.from({ length: n }, (_, i) => ({ kind: 'record', payload: { ms, i } })),
      );
    const ranIn = async () =>
      (await db.pool.query('SELECT DISTINCT pid FROM executions')).rows.map((r) => r.pid as number);
    while (!(await ranIn()).includes(victim) || !(await ranIn()).includes(survivor)) {
      await record(8, 50);
      await until(
        'the warm-up jobs done',
        () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status <> 'done'"),
        (n) => n === 0,
        60_000,
      );
    }
    await db.pool.query('DELETE FROM jobvisor.jobs; TRUNCATE executions');
    // 8 jobs run and 4 wait, so the survivor has room when the hung one's come back.
    await record(12, 2500);
    await until(
      'jobs running for 300 ms in both processes',
      async () =>
        (
          await db.pool.query(
            `SELECT DISTINCT split_part(locked_by, ':', 2)::int AS pid FROM jobvisor.jobs
              WHERE status = 'running' AND started_at < clock_timestamp() - interval '300 milliseconds'`,
          )
        ).rows.map((r) => r.pid as number),
      (pids) => pids.includes(survivor) && pids.includes(victim),
      60_000,
    );
    const victimId = String(
      (
        await db.pool.query("SELECT locked_by FROM jobvisor.jobs WHERE split_part(locked_by, ':', 2)::int = $1", [
          victim,
        ])
      ).rows[0].locked_by,
    );

    process.kill(victim, 'SIGUSR2');
    const hungAt = Date.now();

    // While it hangs: /healthz (200) names it and how long it has been silent.
    const seen = await until(
      '/healthz names the silent process',
      () => healthz(c),
      (h) => h.hung.some((x) => x.pid === victim),
      LIMIT_MS,
      100,
    );
    const entry = seen.hung.find((x) => x.pid === victim);
    assert.equal(seen.status, 'ok');
    assert.equal(entry?.child, 1);
    assert.ok((entry?.silentMs ?? 0) >= REPORT_SILENT_MS, JSON.stringify(entry));
    assert.equal(entry?.killAtMs, LIMIT_MS);
    // Its task threads run on while its event loop is gone: not a stopped process.
    await until(
      'a task thread of the hung process finishes a job',
      () =>
        count('SELECT count(*)::int AS n FROM executions WHERE pid = $1 AND at > to_timestamp($2 / 1000.0)', [
          victim,
          hungAt,
        ]),
      (n) => n > 0,
      LIMIT_MS,
    );

    await until(
      'the hung process is killed',
      () => isAlive(victim),
      (alive) => !alive,
      LIMIT_MS + 10_000,
      5,
    );
    const killedMs = Date.now() - hungAt;
    const exitedAt = Date.now();
    await until(
      "the hung process's jobs handed back",
      () =>
        count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running' AND locked_by = $1", [victimId]),
      (n) => n === 0,
      5_000,
      5,
    );
    const handedBackMs = Date.now() - exitedAt;
    assert.ok(killedMs >= LIMIT_MS - 1500, `killed ${killedMs} ms after the hang began, not before the bound`);
    assert.ok(killedMs <= LIMIT_MS + 3000, `killed ${killedMs} ms after the hang began (bound ${LIMIT_MS} ms)`);
    assert.ok(handedBackMs <= 1000, `its running jobs pending again ${handedBackMs} ms after its exit`);
    assert.ok(isAlive(survivor), 'the other process lives on');

    const killLine = await c.waitForLog(/^supervisor process hung/, 1000, (l) => l.childPid === victim);
    assert.equal(killLine.child, 1);
    assert.equal(killLine.supervisor, victimId);
    assert.ok(Number(killLine.silentMs) >= LIMIT_MS);
    const exitLine = await c.waitForLog(/^hung supervisor process killed/, 5000, (l) => l.childPid === victim);
    assert.equal(exitLine.signal, 'SIGKILL');
    const handedBack = Number(exitLine.handedBack);
    assert.ok(handedBack >= 1, `jobs handed back: ${handedBack}`);

    // The jobs it held run again elsewhere, promptly (their second attempt, not through a lease).
    const rerun = await until(
      'the handed-back jobs run again',
      () =>
        count(
          `SELECT count(*)::int AS n FROM executions WHERE attempt = 2 AND pid <> $1
            AND at < to_timestamp($2 / 1000.0) + interval '10 seconds'`,
          [victim, exitedAt],
        ),
      (n) => n >= handedBack,
      15_000,
    );
    assert.ok(rerun >= handedBack);

    const started = await c.waitForLog(
      /^supervisor process started$/,
      10_000,
      (l) => l.child === 1 && l.childPid !== victim,
    );
    const replacedMs = Number(started.time) - exitedAt;
    assert.ok(replacedMs <= 2000, `a new process in slot 1 ${replacedMs} ms after the kill`);

    const after = await healthz(c);
    assert.equal(after.lastKilled?.pid, victim);
    assert.equal(after.lastKilled?.child, 1);
    assert.ok(!after.hung.some((x) => x.pid === victim));
    const metrics = await (await fetch(`http://127.0.0.1:${c.metricsPort}/metrics`)).text();
    assert.equal(metricSum(metrics, 'jobvisor_cluster_hung_total', /child="1"/), 1);
    console.log(
      `# hung child: on /healthz within ${entry?.silentMs} ms of silence, killed ${killedMs} ms after the hang, ` +
        `${handedBack} jobs pending ${handedBackMs} ms after the kill, new process ${replacedMs} ms after`,
    );
  });

  it('long synchronous task set-up (a top level blocked past the bound) runs in threads: nothing is killed', async () => {
    const importLog = path.join(tmpdir(), `jobvisor-sync-import-${process.pid}-${Date.now()}`);
    const busyMs = LIMIT_MS + 3000;
    const c = (cluster = await spawnCluster(2, {
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: CONFIG,
      env: { JOBVISOR_TEST_SYNC_IMPORT_MS: String(busyMs), JOBVISOR_TEST_SYNC_IMPORT_LOG: importLog },
      readyTimeoutMs: 120_000,
    }));
    const pids = c.childPids();
    await enqueueMany(
      db.pool,
      Array.from({ length: 6 }, () => ({ kind: 'sync_import', payload: {} })),
    );
    await until(
      'the sync_import jobs done',
      () => count("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE kind = 'sync_import' AND status = 'done'"),
      (n) => n === 6,
      120_000,
      200,
    );
    const imports = existsSync(importLog) ? readFileSync(importLog, 'utf8').trim().split('\n') : [];
    // The start-up check of each process, then each worker thread that ran one.
    assert.ok(imports.length >= 3, imports.join('; '));
    assert.ok(
      imports.every((l) => l.startsWith('thread ')),
      `every import of the module ran in a thread: ${imports.join('; ')}`,
    );
    assert.deepEqual(
      c.logs.filter((l) => /hung/.test(String(l.msg))),
      [],
    );
    for (const pid of pids) assert.ok(isAlive(pid), `supervisor process ${pid} was not killed`);
    assert.deepEqual(c.childPids(), pids, 'no process replaced');
    const h = await healthz(c);
    assert.deepEqual(h.hung, []);
    assert.equal(h.lastKilled, undefined);
  });
});
