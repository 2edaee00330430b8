/**
 * run({ pool }) with the app's own pool, which the app ends while the runner
 * runs (test/fixtures/apps/pool_end.ts, a real process on the real database):
 * the runner stops with one line that says why, writes what it holds through
 * its heartbeat connection, and hands that connection back, so the app's
 * `pool.end()` resolves and the process exits. Before, `pool.end()` never
 * resolved, the runner logged `database error` every few seconds and its
 * finished jobs stayed `running` until another replica's reaper ran them again.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { report, until } from '../helpers/chaos/measure.ts';

const APP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/apps/pool_end.ts');
const GRACE_MS = 10_000;
const NAP_MS = 1500;
/** The runner's line (src/run/runner.ts POOL_ENDED), matched here so the test runs on code without it. */
const POOL_ENDED = /^the pg\.Pool given to run\(\) was ended while the runner was running/;

let db: TestDatabase;
const children: ChildProcess[] = [];

before(async () => {
  db = await createTestDatabase('run_pool_end');
  await db.pool.query('CREATE TABLE naps (job_id bigint NOT NULL, attempt int NOT NULL)');
});

after(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await db.drop();
});

interface App {
  child: ChildProcess;
  lines: Array<Record<string, unknown>>;
  line(msg: RegExp, timeoutMs: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

function startApp(): App {
  const child = spawn(process.execPath, ['--import', 'tsx', APP], {
    env: { ...process.env, DATABASE_URL: db.url, TASK: path.join(FIXTURE_TASKS, 'nap.js'), GRACE: `${GRACE_MS}ms` },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: Array<Record<string, unknown>> = [];
  let rest = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop() ?? '';
    for (const p of parts) if (p.trim()) lines.push(parse(p));
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    line: (msg, timeoutMs) =>
      until(
        `app line ${msg} (stderr: ${stderr.slice(-500)})`,
        () => lines.find((l) => typeof l.msg === 'string' && msg.test(l.msg)),
        (l) => l !== undefined,
        timeoutMs,
      ) as Promise<Record<string, unknown>>,
  };
}

function parse(line: string): Record<string, unknown> {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { raw: line };
  }
}

async function statuses(ids: string[]): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) GROUP BY status',
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe('run({ pool }) whose pool the app ends under it', () => {
  it('stops with one line, writes its outcomes through the connection it holds, and lets pool.end() resolve', async () => {
    const app = startApp();
    await app.line(/^app: running$/, 60_000);
    const ids = (
      await enqueueMany(
        db.pool,
        Array.from({ length: 40 }, () => ({ kind: 'nap', payload: { ms: NAP_MS } })),
      )
    ).map((r) => r.id);
    // Some done, four running (concurrency 4) when the app ends its pool.
    await until(
      'some jobs done and four running',
      () => statuses(ids),
      (s) => (s.done ?? 0) >= 4 && s.running === 4,
      60_000,
    );
    const t0 = performance.now();
    app.child.stdin?.write('end\n');
    const atEnd = (
      await db.pool.query<{ id: string; status: string }>(
        'SELECT id::text, status FROM jobvisor.jobs WHERE id = ANY($1)',
        [ids],
      )
    ).rows;
    const runningAtEnd = atEnd.filter((r) => r.status === 'running').map((r) => r.id);

    const ended = await app.line(/^app: pool ended$/, GRACE_MS + 10_000);
    const stopped = await app.line(/^app: runner stopped$/, 10_000);
    const code = await Promise.race([
      app.exited,
      until(
        'app exit',
        () => app.child.exitCode,
        (c) => c !== null,
        15_000,
      ),
    ]);
    const wallMs = performance.now() - t0;

    const final = await statuses(ids);
    const runs = (
      await db.pool.query<{ job_id: string; n: number }>(
        'SELECT job_id::text, count(*)::int AS n FROM naps WHERE job_id = ANY($1) GROUP BY job_id',
        [ids],
      )
    ).rows;
    const attempts = (
      await db.pool.query<{ id: string; attempts: number; status: string }>(
        'SELECT id::text, attempts, status FROM jobvisor.jobs WHERE id = ANY($1)',
        [ids],
      )
    ).rows;
    const presence = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobvisor.supervisors');
    const said = app.lines.filter((l) => typeof l.msg === 'string' && POOL_ENDED.test(l.msg));
    const dbErrors = app.lines.filter((l) => l.msg === 'database error');
    report('run.pool-ended', {
      jobs: ids.length,
      atEnd: Object.fromEntries(
        ['pending', 'running', 'done'].map((k) => [k, atEnd.filter((r) => r.status === k).length]),
      ),
      poolEndMs: ended.ms,
      runnerStoppedMs: stopped.ms,
      exitMs: Math.round(wallMs),
      final,
      poolEndedLines: said.length,
      databaseErrorLines: dbErrors.length,
    });

    assert.equal(code, 0, 'the app exits by itself: nothing of the runner holds it');
    assert.equal(said.length, 1, `one line says why the runner stopped: ${JSON.stringify(said)}`);
    assert.deepEqual(dbErrors, [], 'no "database error" lines');
    assert.ok((ended.ms as number) < GRACE_MS + 5000, `pool.end() resolved after ${String(ended.ms)} ms`);
    assert.equal(final.running ?? 0, 0, `no job left running: ${JSON.stringify(final)}`);
    // The four running at the end finished within the grace and were written through the held connection.
    for (const id of runningAtEnd) assert.equal(attempts.find((a) => a.id === id)?.status, 'done', `job ${id} done`);
    assert.ok(
      runs.every((r) => r.n === 1),
      `every job ran once: ${JSON.stringify(runs.filter((r) => r.n !== 1))}`,
    );
    assert.ok(
      attempts.every((a) => (a.status === 'done' ? a.attempts === 1 : a.status === 'pending' && a.attempts === 0)),
      `done after one attempt or still pending untouched: ${JSON.stringify(attempts)}`,
    );
    assert.equal(presence.rows[0]?.n, 0, "the runner's supervisors row is removed");
  });
});
