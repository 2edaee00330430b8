/**
 * Chaos: tasks that kill, hog or misuse their worker thread, in a real supervisor
 * process, while ordinary jobs keep arriving:
 *   process.exit() · an error thrown from a timer · for(;;){} · out of memory
 *   (pool.maxOldGenerationSizeMb).
 * Each bad job retries, then dead-letters with an error that says what
 * happened; the supervisor stays up (/healthz), and the ordinary jobs never
 * stall. A bad job on a queue whose jobs share a thread takes its neighbours'
 * attempt with it: they are retried and finish (measured below).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { count, httpGet, report, summary, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;
let s: SpawnedSupervisor;

before(async () => {
  db = await createTestDatabase('chaos_threads');
  await db.pool.query(
    'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
  );
  s = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: {
      pool: { maxThreads: 5, maxOldGenerationSizeMb: 64 },
      queues: {
        default: { concurrency: 10, jobsPerThread: 10 },
        // A new thread loads the task module first (through tsx, from sources: seconds on a
        // loaded 2-vCPU machine): only the spinning task gets a short timeout.
        cpu: { concurrency: 2, jobsPerThread: 1, timeout: '30s' },
        spin: { concurrency: 1, jobsPerThread: 1, timeout: '3s' },
        // Near its heap limit a thread spends seconds in GC before V8 gives up: no short timeout here.
        mem: { concurrency: 1, jobsPerThread: 1, timeout: '60s' },
      },
      backoff: { base: '100ms', max: '500ms' },
      poll: { interval: '1s' },
    },
    readyTimeoutMs: 60_000,
  });
});

after(async () => {
  await s?.stop('SIGKILL');
  await db.drop();
});

const FAULTS: Array<{ kind: string; queue: string; error: RegExp }> = [
  { kind: 'chaos_exit', queue: 'cpu', error: /^WorkerExited: .*process\.exit/ },
  // Caught in the thread and charged to its job (src/worker/escapes.ts): the thread lives on.
  { kind: 'chaos_timer_throw', queue: 'cpu', error: /^UncaughtException: .*chaos: thrown from a timer/ },
  {
    kind: 'chaos_spin',
    queue: 'spin',
    error: /^TimeoutError: job timed out after 3000 ms and did not stop; its worker thread was terminated/,
  },
  { kind: 'chaos_oom', queue: 'mem', error: /^WorkerOutOfMemory: .*maxOldGenerationSizeMb/ },
];

describe('chaos: thread faults', () => {
  it('exit, throw from a timer, never yield, out of memory: each dead-letters with a clear error; the supervisor and other jobs carry on', async () => {
    // Warm-up: the ordinary queue's thread is up before anything is measured.
    const warm = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 20 }, () => ({ kind: 'chaos_run', payload: { ms: 5 } })),
      )
    ).map((r) => r.id);
    await until(
      'warm-up done',
      () =>
        count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [warm]),
      (n) => n === warm.length,
      60_000,
      50,
    );
    const t0 = Date.now();
    const faultIds = (
      await enqueueMany(
        db.pool,
        FAULTS.flatMap((f) => [1, 2].map(() => ({ kind: f.kind, queue: f.queue, maxAttempts: 2 }))),
      )
    ).map((r) => r.id);
    // Ordinary jobs arrive in batches while the faults happen; each batch must finish promptly.
    const batchMs: number[] = [];
    let healthy = 0;
    const faultsSettled = () =>
      count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'failed'", [
        faultIds,
      ]);
    while ((await faultsSettled()) < faultIds.length) {
      if (Date.now() - t0 > 90_000) break;
      const b0 = Date.now();
      const ids = (
        await enqueueMany(
          db.pool,
          Array.from({ length: 100 }, () => ({ kind: 'chaos_run', payload: { ms: 5 } })),
        )
      ).map((r) => r.id);
      await until(
        'a batch of ordinary jobs done',
        () =>
          count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [ids]),
        (n) => n === ids.length,
        30_000,
        20,
      );
      batchMs.push(Date.now() - b0);
      healthy += ids.length;
    }
    const settledMs = Date.now() - t0;
    const rows = (
      await db.pool.query<{ kind: string; status: string; attempts: number; last_error: string }>(
        'SELECT kind, status, attempts, last_error FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
        [faultIds],
      )
    ).rows;
    const health = await httpGet(s.metricsPort, '/healthz');
    const ready = await httpGet(s.metricsPort, '/readyz');
    const threadDeaths = s.logs.filter((l) => l.msg === 'worker thread died').length;
    report('thread-faults', {
      faults: FAULTS.map((f) => f.kind),
      settledMs,
      healthyJobs: healthy,
      healthyBatchMs: summary(batchMs),
      errors: Object.fromEntries(
        FAULTS.map((f) => [f.kind, rows.find((r) => r.kind === f.kind)?.last_error.slice(0, 160)]),
      ),
      threadDeathLogLines: threadDeaths,
      healthz: health.status,
      readyz: ready.status,
    });
    for (const r of rows) {
      const fault = FAULTS.find((f) => f.kind === r.kind);
      assert.equal(r.status, 'failed', `${r.kind} dead-lettered`);
      assert.equal(r.attempts, 2, `${r.kind} used both attempts`);
      assert.match(r.last_error, fault?.error as RegExp, `${r.kind}: clear last_error (${JSON.stringify(rows)})`);
    }
    assert.ok(s.child.exitCode === null && s.child.signalCode === null, 'the supervisor process lives');
    assert.equal(health.status, 200);
    assert.equal(ready.status, 200);
    assert.ok(healthy >= 100, 'ordinary jobs ran meanwhile');
    assert.ok(Math.max(...batchMs) < 10_000, `no ordinary batch stalled: ${JSON.stringify(batchMs)}`);
  });

  it('a thread killer on a shared-thread queue: its neighbours are retried and finish; only it dead-letters', async () => {
    // Nine slow ordinary jobs occupy the default queue's shared thread, then the killer joins them.
    const neighbours = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 9 }, () => ({ kind: 'chaos_run', payload: { ms: 1500, retryMs: 10 } })),
      )
    ).map((r) => r.id);
    await until(
      'neighbours running',
      () =>
        count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'running'", [
          neighbours,
        ]),
      (n) => n === 9,
      20_000,
      20,
    );
    const [killer] = (await enqueueMany(db.pool, [{ kind: 'chaos_exit', maxAttempts: 1 }])).map((r) => r.id);
    const t0 = Date.now();
    await until(
      'neighbours done',
      () =>
        count(db.pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'", [
          neighbours,
        ]),
      (n) => n === 9,
      30_000,
    );
    const recoveredMs = Date.now() - t0;
    const killerRow = (await db.pool.query('SELECT status, last_error FROM jobvisor.jobs WHERE id = $1', [killer]))
      .rows[0];
    const charged = (
      await db.pool.query<{ attempts: number; last_error: string | null }>(
        'SELECT attempts, last_error FROM jobvisor.jobs WHERE id = ANY($1)',
        [neighbours],
      )
    ).rows;
    report('thread-faults.shared-thread', {
      neighbours: 9,
      recoveredMs,
      neighbourAttempts: charged.map((r) => r.attempts),
      neighbourError: charged.find((r) => r.last_error)?.last_error?.slice(0, 160) ?? null,
      killer: killerRow.status,
    });
    assert.equal(killerRow.status, 'failed');
    assert.match(killerRow.last_error, /WorkerExited/);
    assert.ok(s.child.exitCode === null, 'the supervisor process lives');
  });
});
