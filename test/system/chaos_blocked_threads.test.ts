/**
 * Chaos: a task blocked in a synchronous call, which terminating its thread
 * cannot stop, in a real supervisor process.
 *   - `execSync('sleep 30')`: on SIGTERM the supervisor hands the job back, kills
 *     the child the thread waits on, and exits 0 within shutdown.grace + margin.
 *   - a FIFO read (a system call no one can interrupt): after a timeout the
 *     thread is reported stuck (log, event, jobvisor_threads_stuck); SIGTERM
 *     ends the process hard within shutdown.grace + margin.
 * Before this, the first kept the process alive until `sleep` returned and the
 * second forever. Measured: OS threads and RSS of the process.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { SHUTDOWN_MARGIN_MS } from '../../src/run/shutdown.ts';
import { httpGet, report, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const GRACE_MS = 1000;
let db: TestDatabase;
let dir: string;
const started: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('chaos_blocked');
  dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-blocked-'));
});

after(async () => {
  for (const s of started) await s.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  await db.drop();
});

function processStats(pid: number): { threads: number; rssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
  return { threads: field('Threads'), rssMb: Math.round(field('VmRSS') / 1024) };
}

async function start(queueTimeout: string): Promise<SpawnedSupervisor> {
  const s = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: {
      pool: { maxThreads: 2 },
      queues: { default: { concurrency: 2, jobsPerThread: 1, timeout: queueTimeout } },
      shutdown: { grace: `${GRACE_MS}ms` },
      poll: { interval: '200ms' },
    },
    readyTimeoutMs: 60_000,
  });
  started.push(s);
  return s;
}

async function status(id: string): Promise<{ status: string; attempts: number; last_error: string | null }> {
  return (await db.pool.query('SELECT status, attempts, last_error FROM jobvisor.jobs WHERE id = $1', [id])).rows[0];
}

async function sigterm(s: SpawnedSupervisor) {
  const t0 = Date.now();
  s.child.kill('SIGTERM');
  const exit = await Promise.race([
    s.exited,
    // A little slack over the bound for a loaded machine; before the fix: 30 s, or never.
    new Promise<null>((resolve) => setTimeout(() => resolve(null), GRACE_MS + SHUTDOWN_MARGIN_MS + 3000)),
  ]);
  return { exit, exitMs: Date.now() - t0 };
}

describe('chaos: threads blocked in synchronous calls', () => {
  it('execSync: SIGTERM hands the job back and exits 0 within shutdown.grace + margin', async () => {
    const s = await start('60s');
    const [blocked, secret] = (
      await enqueueMany(db.pool, [
        { kind: 'block_exec', payload: { cmd: 'sleep 30' } },
        { kind: 'log_secret', payload: {} },
      ])
    ).map((r) => r.id);
    await until(
      'blocked job running',
      () => status(blocked as string),
      (r) => r.status === 'running',
      30_000,
    );
    await until(
      'secret job done',
      () => status(secret as string),
      (r) => r.status === 'done',
      30_000,
    );
    const blockedStats = processStats(s.pid);
    const { exit, exitMs } = await sigterm(s);
    const row = await status(blocked as string);
    const secretLine = s.logs.find((l) => l.msg === 'task logged secrets');
    report('blocked-thread.execSync', {
      graceMs: GRACE_MS,
      exitMs,
      exit,
      blockedStats,
      job: row,
      logs: s.logs.filter((l) => /thread|child|exit|drain/.test(String(l.msg))),
    });
    assert.ok(exit, `the process exited within ${GRACE_MS} ms + ${SHUTDOWN_MARGIN_MS} ms (took ${exitMs} ms)`);
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.equal(row.status, 'pending', 'the job was handed back');
    assert.equal(row.attempts, 0, 'without using an attempt');
    // Task logs are redacted like the supervisor's.
    assert.ok(secretLine, 'the task logged');
    assert.equal(secretLine.password, '[redacted]');
    assert.equal(secretLine.databaseUrl, 'postgres://app:[redacted]@db/app');
    assert.doesNotMatch(JSON.stringify(s.logs), /hunter2-secret|pw-secret/);
  });

  it('a FIFO read: the stuck thread is reported, and SIGTERM exits hard within shutdown.grace + margin', async () => {
    await db.pool.query("DELETE FROM jobvisor.jobs WHERE kind = 'block_exec'");
    const fifo = path.join(dir, 'never-written');
    execFileSync('mkfifo', [fifo]);
    const s = await start('1s');
    const before = processStats(s.pid);
    const [blocked] = (
      await enqueueMany(db.pool, [{ kind: 'block_fifo', payload: { path: fifo }, maxAttempts: 1 }])
    ).map((r) => r.id);
    const stuckLine = await s.waitForLog(/terminated but still alive/, 60_000);
    const metrics = await httpGet(s.metricsPort, '/metrics');
    const stuckGauge = /^jobvisor_threads_stuck (\d+)/m.exec(metrics.body)?.[1];
    const row = await until(
      'blocked job failed',
      () => status(blocked as string),
      (r) => r.status === 'failed',
      30_000,
    );
    const stuckStats = processStats(s.pid);
    const { exit, exitMs } = await sigterm(s);
    report('blocked-thread.fifo', {
      graceMs: GRACE_MS,
      exitMs,
      exit,
      before,
      stuck: stuckStats,
      stuckGauge,
      lastError: row.last_error,
    });
    assert.equal(stuckLine.stuck, 1);
    assert.equal(stuckGauge, '1');
    assert.match(row.last_error ?? '', /TimeoutError: .*its worker thread was terminated/);
    assert.ok(exit, `the process exited within ${GRACE_MS} ms + ${SHUTDOWN_MARGIN_MS} ms (took ${exitMs} ms)`);
    assert.equal(exit.signal, 'SIGKILL', 'a hard exit');
    assert.ok(
      s.logs.some((l) => /did not stop: exiting hard/.test(String(l.msg))),
      'the hard exit is logged first',
    );
  });
});
