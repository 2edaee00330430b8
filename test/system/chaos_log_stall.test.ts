/**
 * A supervisor whose stdout reader stops reading (a hung log driver; here a
 * FIFO whose read end this test holds and does not read) while it runs long
 * jobs and logs a storm of failures. Real `jobvisor start` processes against
 * a real database: the stalled supervisor keeps its leases (a second
 * supervisor reaps and re-runs nothing), /healthz answers throughout, lines
 * beyond the buffer are dropped and counted, and once the reader resumes every
 * line that arrives is whole, followed by one line saying how many were dropped.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { BIN, spawnSupervisor, writeConfig, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LONG_JOBS = 10;
const LONG_MS = 15_000;
/**
 * A long job outlives its lease, so it needs renewals. A write blocking on the
 * stalled pipe would hold the event loop (asserted below) for as long as the
 * stall lasts, which costs any lease. 5 s was lost on loaded CI machines by
 * a renewal coming late; whether the loop was held up then was not recorded.
 */
const LEASE = '10s';
/** A held-up event loop that only blocking writes explain: 27 ms in a quiet run. */
const LOOP_HELD_MAX_MS = 2000;
const CONFIG = {
  metrics: { port: 0, host: '127.0.0.1' },
  jobs: { lease: LEASE },
  reaper: { interval: '500ms' },
  backoff: { base: '10ms', max: '40ms' },
  poll: { interval: '100ms' },
};

/** A FIFO whose read end this process holds: read() takes what is there now, and nothing is read otherwise. */
function heldFifo(dir: string) {
  const file = path.join(dir, 'stdout');
  const made = spawnSync('mkfifo', [file]);
  assert.equal(made.status, 0, String(made.stderr));
  const readFd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeFd = openSync(file, constants.O_WRONLY);
  const buffer = Buffer.alloc(1 << 16);
  let text = '';
  return {
    writeFd,
    /** Complete lines read now (the rest waits for its newline). */
    read(): string[] {
      for (;;) {
        let n: number;
        try {
          n = readSync(readFd, buffer, 0, buffer.length, null);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw err;
        }
        if (n === 0) break;
        text += buffer.toString('utf8', 0, n);
      }
      const end = text.lastIndexOf('\n');
      if (end < 0) return [];
      const lines = text.slice(0, end).split('\n');
      text = text.slice(end + 1);
      return lines;
    },
    close: () => closeSync(readFd),
  };
}

describe('a stalled stdout reader', { timeout: 180_000 }, () => {
  let db: TestDatabase;
  let dir: string;
  let child: ChildProcess | undefined;
  let other: SpawnedSupervisor | undefined;

  before(async () => {
    db = await createTestDatabase();
    await db.pool.query('CREATE TABLE chaos_runs (job_id bigint, attempt int, pid int)');
    dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-log-stall-'));
  });
  after(async () => {
    child?.kill('SIGKILL');
    await other?.stop('SIGKILL');
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('costs log lines, counted and said, never leases or /healthz; the lines that arrive are whole', async () => {
    const fifo = heldFifo(dir);
    child = spawn(process.execPath, [BIN, 'start'], {
      cwd: root,
      stdio: ['ignore', fifo.writeFd, 'inherit'],
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        JOBVISOR_CONFIG: writeConfig({
          ...CONFIG,
          queues: { default: { concurrency: LONG_JOBS }, loud: { concurrency: 6 } },
        }),
        JOBVISOR_TASKS_DIR: FIXTURE_TASKS,
        LOG_LEVEL: 'info',
        NODE_ENV: 'test',
      },
    });
    closeSync(fifo.writeFd);
    const pid = child.pid as number;
    const lines: string[] = [];
    const ready = await until(
      'the stalled supervisor is ready',
      () => {
        lines.push(...fifo.read());
        return lines.map((l) => JSON.parse(l) as { msg?: string; metricsPort?: number }).find((l) => l.msg === 'ready');
      },
      (r) => r !== undefined,
      30_000,
    );
    const base = `http://127.0.0.1:${ready?.metricsPort}`;
    // From here on nobody reads this supervisor's stdout.

    await enqueueMany(
      db.pool,
      Array.from({ length: LONG_JOBS }, (_, i) => ({ kind: 'chaos_run', payload: { ms: LONG_MS, i } })),
    );
    await until(
      'the long jobs run on the stalled supervisor',
      async () =>
        Number((await db.pool.query("SELECT count(*) FROM jobvisor.jobs WHERE status = 'running'")).rows[0].count),
      (n) => n === LONG_JOBS,
    );
    // Failures that log (last_error keeps ~2 KB of each): 2,000 lines of ~2.3 KB, past the pipe and the
    // 1 MiB buffer several times over, and then the storm ends. An endless one (200 attempts each, 16,000
    // failures) rewrote ~50 KB rows (20 errors with stacks) hundreds of times a second for the whole run,
    // and once on a loaded CI machine a long job was re-run: a renewal came later than 5 s, which the
    // storm's own load can cause whatever the logging does.
    await enqueueMany(
      db.pool,
      Array.from({ length: 80 }, (_, i) => ({
        kind: 'loud_fail',
        queue: 'loud',
        maxAttempts: 25,
        payload: { size: 8000, i },
      })),
    );
    other = await spawnSupervisor({ databaseUrl: db.url, tasksDir: FIXTURE_TASKS, config: CONFIG });

    const health: Array<number | string> = [];
    await until(
      'the long jobs done',
      async () => {
        try {
          health.push((await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1500) })).status);
        } catch (err) {
          health.push((err as Error).name);
        }
        return Number(
          (await db.pool.query("SELECT count(*) FROM jobvisor.jobs WHERE kind = 'chaos_run' AND status = 'done'"))
            .rows[0].count,
        );
      },
      (n) => n === LONG_JOBS,
      60_000,
      250,
    );
    const runs = await db.pool.query<{ job_id: string; attempt: number; pid: number }>('SELECT * FROM chaos_runs');
    const loud = (
      await db.pool.query<{ n: string; len: number }>(
        "SELECT sum(attempts) AS n, max(length(last_error)) AS len FROM jobvisor.jobs WHERE kind = 'loud_fail'",
      )
    ).rows[0];
    const reaped = other.logs.filter((l) => l.msg === 'expired leases reaped');
    const metrics = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text(), String);
    const dropped = Number(/^jobvisor_log_lines_dropped_total (\d+)/m.exec(metrics)?.[1] ?? NaN);
    // Since start-up (nothing else scrapes it): how long the supervisor's event loop was ever held up.
    const loopMaxMs = Math.round(
      1000 * Number(/^nodejs_eventloop_lag_max_seconds ([\d.e+-]+)/m.exec(metrics)?.[1] ?? NaN),
    );
    process.stderr.write(
      `# /healthz: ${health.length} probes, ${health.filter((h) => h !== 200).length} failed; ` +
        `${runs.rowCount} runs of ${LONG_JOBS} long jobs; ${loud?.n} failures of ${loud?.len} characters logged; ${dropped} log lines dropped; ` +
        `event loop held up at most ${loopMaxMs} ms\n`,
    );
    assert.deepEqual(
      health.filter((h) => h !== 200),
      [],
      '/healthz answered every probe',
    );
    assert.ok(
      loopMaxMs < LOOP_HELD_MAX_MS,
      `the stalled reader held up the event loop ${loopMaxMs} ms (limit ${LOOP_HELD_MAX_MS})`,
    );
    assert.deepEqual(reaped, [], `the other supervisor reaped nothing (event loop held up at most ${loopMaxMs} ms)`);
    assert.equal(runs.rowCount, LONG_JOBS, 'each long job ran once');
    const rerun = runs.rows.filter((r) => r.attempt !== 1 || r.pid !== pid);
    if (rerun.length > 0) {
      const errors = await db.pool.query(
        "SELECT id, attempts, last_error FROM jobvisor.jobs WHERE kind = 'chaos_run' AND attempts > 1",
      );
      assert.fail(
        `all on the stalled supervisor (pid ${pid}), attempt 1; re-run: ${JSON.stringify(rerun)}; ` +
          `why: ${JSON.stringify(errors.rows)}`,
      );
    }
    assert.ok(dropped > 0, `lines were dropped (${dropped}): the reader really was stalled past the buffer`);

    // Stop the storm, then read again: whole lines, and one saying what was dropped.
    await db.pool.query(
      "UPDATE jobvisor.jobs SET status = 'cancelled' WHERE kind = 'loud_fail' AND status = 'pending'",
    );
    const resumed: Array<Record<string, unknown>> = [];
    await until(
      'the line saying lines were dropped',
      () => {
        for (const line of fifo.read()) resumed.push(JSON.parse(line) as Record<string, unknown>);
        return resumed.find((l) => l.msg === 'log output was stalled: lines dropped');
      },
      (l) => l !== undefined,
      30_000,
      10,
    );
    assert.ok(resumed.length > 0);
    const said = resumed.find((l) => l.msg === 'log output was stalled: lines dropped') as { dropped: number };
    assert.ok(said.dropped > 0);

    // A drain while the reader reads: exit 0, and the last lines whole too.
    child.kill('SIGTERM');
    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    let code: number | null | undefined;
    void exited.then((c) => (code = c));
    await until(
      'the stalled supervisor exits',
      () => {
        for (const line of fifo.read()) resumed.push(JSON.parse(line) as Record<string, unknown>);
        return code;
      },
      (c) => c !== undefined,
      30_000,
    );
    for (const line of fifo.read()) resumed.push(JSON.parse(line) as Record<string, unknown>);
    assert.equal(code, 0);
    assert.ok(
      resumed.some((l) => l.msg === 'supervisor stopped'),
      'the drain was logged',
    );
    fifo.close();
  });
});
