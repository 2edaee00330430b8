/**
 * CPU-heavy work on the pool, with a real supervisor in a child process: while every
 * thread is busy with real thumbnail jobs the main thread still answers /healthz,
 * renews leases on time and keeps its event-loop delay low; a task that exceeds the
 * thread heap limit fails only its own job.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';

const THREADS = 2;
const LEASE_MS = 3000;
/** Heartbeats run every lease/3; one missed beat by more than this fails the test. */
const MIN_LEASE_LEFT_MS = 1000;
/** Long enough for three heartbeats whatever the machine's speed (a thumbnail's time is not). */
const BURN_MS = 4500;

let db: TestDatabase;
let work: string;
let heavy: string;
let light: string;
let supervisor: Awaited<ReturnType<typeof spawnSupervisor>>;

/** A grainy JPEG: grain is expensive to encode, so each job keeps a core busy for seconds. */
async function makeImage(file: string, width: number, height: number): Promise<string> {
  await sharp({
    create: { width, height, channels: 3, background: '#3070c0', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
  })
    .jpeg({ quality: 90 })
    .toFile(file);
  return file;
}

async function get(route: string): Promise<{ status: number; body: string; ms: number }> {
  const start = performance.now();
  const res = await fetch(`http://127.0.0.1:${supervisor.metricsPort}${route}`);
  const body = await res.text();
  return { status: res.status, body, ms: performance.now() - start };
}

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  assert.ok(m, `metric ${name} missing from /metrics`);
  return Number(m[1]);
}

async function statuses(ids: string[]): Promise<Map<string, { status: string; lastError: string | null }>> {
  const { rows } = await db.pool.query<{ id: string; status: string; last_error: string | null }>(
    'SELECT id, status, last_error FROM jobvisor.jobs WHERE id = ANY($1::bigint[])',
    [ids],
  );
  return new Map(rows.map((r) => [r.id, { status: r.status, lastError: r.last_error }]));
}

/** Polls the jobs table until `done` holds, failing after `ms`. */
async function waitForJobs(ids: string[], done: (s: string[]) => boolean, ms: number): Promise<void> {
  const read = async () => [...(await statuses(ids)).values()].map((s) => s.status);
  await until(`jobs ${ids.join(', ')}`, read, done, ms);
}

async function enqueue(jobs: { kind: string; payload: unknown; maxAttempts?: number }[]): Promise<string[]> {
  const results = await enqueueMany(
    db.pool,
    jobs.map((j) => ({ queue: 'cpu', ...j })),
  );
  return results.map((r) => r.id);
}

before(async () => {
  db = await createTestDatabase();
  work = await mkdtemp(path.join(tmpdir(), 'jobvisor-cpu-pool-'));
  heavy = await makeImage(path.join(work, 'heavy.jpg'), 3000, 2000);
  light = await makeImage(path.join(work, 'light.jpg'), 400, 300);
  supervisor = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: path.resolve('test/fixtures/tasks'),
    config: {
      pool: { maxThreads: THREADS, maxOldGenerationSizeMb: 64 },
      queues: { cpu: { concurrency: THREADS, jobsPerThread: 1 } },
      jobs: { lease: `${LEASE_MS / 1000}s` },
      // Sources and outputs under `work`: the thumbnail task's confined roots.
      thumbnails: { dir: work, format: 'webp', sourceRoots: [work] },
    },
  });
});

after(async () => {
  await supervisor?.stop();
  await db?.drop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('CPU-heavy jobs on the pool', () => {
  test('with every thread busy: /healthz < 50 ms, leases renewed on time, event-loop p99 < 20 ms', async (t) => {
    // Timed CPU burners first, then real thumbnails: every thread stays busy
    // throughout, and the burners run long enough to need three lease renewals.
    const burners = await enqueue(
      Array.from({ length: THREADS }, () => ({ kind: 'cpu_burn', payload: { ms: BURN_MS } })),
    );
    const thumbs = await enqueue(
      Array.from({ length: 2 * THREADS }, (_, i) => ({
        kind: 'thumbnail',
        payload: { source: heavy, widths: [2400, 1800, 1200], outDir: path.join(work, 'heavy', String(i)) },
      })),
    );
    const ids = [...burners, ...thumbs];
    // Claimed is not yet on a thread (a thread boots and reads the task first): wait
    // for the pool to say every thread is busy. The last scrape also starts a fresh
    // event-loop delay window (prom-client resets it per scrape).
    await until(
      'every thread busy',
      async () => metric((await get('/metrics')).body, 'jobvisor_pool_threads_busy'),
      (busy) => busy === THREADS,
      30_000,
    );

    const healthz: number[] = [];
    const renewals = new Map<string, Set<number>>();
    let minLeaseLeftMs = Infinity;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const h = await get('/healthz');
      assert.equal(h.status, 200);
      healthz.push(h.ms);
      const { rows } = await db.pool.query<{ id: string; until_ms: string; left_ms: number }>(
        `SELECT id, (extract(epoch FROM locked_until) * 1000)::bigint AS until_ms,
                (extract(epoch FROM locked_until - clock_timestamp()) * 1000)::float8 AS left_ms
           FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) AND status = 'running'`,
        [ids],
      );
      for (const r of rows) {
        if (!renewals.has(r.id)) renewals.set(r.id, new Set());
        renewals.get(r.id)!.add(Number(r.until_ms));
        minLeaseLeftMs = Math.min(minLeaseLeftMs, r.left_ms);
      }
      const states = [...(await statuses(ids)).values()].map((s) => s.status);
      if (states.every((s) => s === 'done' || s === 'failed')) break;
      assert.ok(Date.now() < deadline, `jobs did not finish: ${states.join(', ')}`);
      await delay(100);
    }
    const last = await get('/metrics');
    const lagP99 = metric(last.body, 'nodejs_eventloop_lag_p99_seconds');

    const outcome = await statuses(ids);
    assert.deepEqual(
      [...outcome.values()].map((s) => s.status),
      ids.map(() => 'done'),
      JSON.stringify([...outcome.values()]),
    );
    const meta = await sharp(path.join(work, 'heavy', '0', 'heavy-1200.webp')).metadata();
    assert.deepEqual([meta.width, meta.height], [1200, 800]);

    const sorted = [...healthz].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1);
    t.diagnostic(`/healthz ms over ${sorted.length} calls: p50 ${at(0.5)} p90 ${at(0.9)} p99 ${at(0.99)} max ${at(1)}`);
    t.diagnostic(
      `event-loop delay p99 ${(lagP99 * 1000).toFixed(1)} ms; least lease left ${minLeaseLeftMs.toFixed(0)} ms; locked_until values per job ${[...renewals.values()].map((v) => v.size).join(', ')}`,
    );
    // A probe that times out restarts the pod, so the bound is on the answers a
    // probe sees: nearly all under 50 ms, none stalled for long. The clock runs in
    // this process, which shares two cores with the supervisor, its threads and
    // PostgreSQL, so two late answers (or one in fifty) are left to the host; a
    // blocked main thread would be late on every answer during a thumbnail.
    const late = healthz.filter((ms) => ms >= 50).length;
    assert.ok(healthz.length >= 20, `only ${healthz.length} /healthz samples`);
    assert.ok(
      late <= Math.max(2, Math.floor(healthz.length / 50)),
      `${late} of ${healthz.length} /healthz answers took 50 ms or more`,
    );
    assert.ok(Math.max(...healthz) < 500, `slowest /healthz answer ${Math.max(...healthz).toFixed(1)} ms`);
    for (const id of burners) {
      const moved = (renewals.get(id)?.size ?? 0) - 1;
      assert.ok(
        moved >= 2,
        `locked_until moved ${moved} times during a ${BURN_MS} ms job: heartbeats are not renewing leases`,
      );
    }
    assert.ok(minLeaseLeftMs > MIN_LEASE_LEFT_MS, `a lease came within ${minLeaseLeftMs.toFixed(0)} ms of expiring`);
    assert.ok(lagP99 < 0.02, `event-loop delay p99 ${lagP99} s`);
  });

  test('a task above pool.maxOldGenerationSizeMb fails its job with an out-of-memory error; other jobs complete', async (t) => {
    const [hog, ...thumbs] = await enqueue([
      { kind: 'cpu_hog_memory', payload: {}, maxAttempts: 1 },
      ...Array.from({ length: 3 }, (_, i) => ({
        kind: 'thumbnail',
        payload: { source: light, widths: [100], outDir: path.join(work, 'light', String(i)) },
      })),
    ]);
    const ids = [hog!, ...thumbs];
    await waitForJobs(ids, (s) => s.every((x) => x === 'done' || x === 'failed'), 60_000);
    const outcome = await statuses(ids);
    t.diagnostic(`out-of-memory job: ${JSON.stringify(outcome.get(hog!))}`);
    assert.equal(outcome.get(hog!)?.status, 'failed');
    assert.match(outcome.get(hog!)?.lastError ?? '', /out of memory|memory limit|heap/i);
    for (const id of thumbs) assert.equal(outcome.get(id)?.status, 'done', outcome.get(id)?.lastError ?? '');

    // The supervisor carries on, with a fresh thread where the old one died.
    assert.equal(supervisor.child.exitCode, null, 'the supervisor process is still running');
    assert.equal((await get('/healthz')).status, 200);
    const [again] = await enqueue([
      { kind: 'thumbnail', payload: { source: light, widths: [50], outDir: path.join(work, 'light', 'again') } },
    ]);
    await waitForJobs([again!], (s) => s[0] === 'done', 30_000);
  });
});
