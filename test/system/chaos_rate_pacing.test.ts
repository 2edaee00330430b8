/**
 * A rate limit as the tasks see it: at most `count` starts in any sliding
 * window of its period, measured from inside the task, under clock skew and
 * under CPU starvation, with real supervisor processes.
 *
 * Starts used to bunch above the limit: a slot that looked past (a clock
 * ahead, a late timer, a starved event loop, a busy thread) started at once,
 * beside the on-time ones: 32-37 starts in the busiest 1-s window of a 20/1s
 * limit with one supervisor 5 s ahead, 43-48 of a 40/1s limit on a loaded
 * machine. Now slots are read against the database's clock (db_clock.ts), and
 * the worker thread, just before calling the task, hands back a job it reaches
 * after its start window: it is claimed again for a new slot, without using
 * an attempt. The window is narrowed by the supervisor's error on the
 * database's clock (rate_slots.ts, startWindow): with a fixed 20-ms window,
 * a loaded run once saw 21 starts in a 1-s window of the 20/1s limit.
 *
 * The clock common to all: each task records Date.now() at its first line
 * (flow_record.js); a supervisor under libfaketime reads a clock exactly its
 * offset off the real one, which is taken back out, so every start is on the
 * machine's real clock. Windows are the limit's own period, with no allowance.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/poll.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { skewedEnv, skipUnlessFaketime } from '../helpers/faketime.ts';
import { createRunsTable, maxStartsInWindow, readRuns } from '../helpers/flow.ts';
import { fixtureFleet, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const skip = skipUnlessFaketime();
let db: TestDatabase;

const AHEAD_MS = 5000;
const CONFIG = {
  pool: { maxThreads: 1, dbPoolSize: 6 },
  queues: {
    twenty: { concurrency: 40, jobsPerThread: 40, rateLimit: { count: 20, period: '1s' } },
    forty: { concurrency: 80, jobsPerThread: 80, rateLimit: { count: 40, period: '1s' } },
  },
  jobs: { lease: '5s' },
  reaper: { interval: '500ms' },
  poll: { interval: '1s' },
};
const plain = fixtureFleet(() => db.url, CONFIG);
const ahead = fixtureFleet(() => db.url, CONFIG, skip ? {} : skewedEnv(AHEAD_MS));
/** Each supervisor's clock offset from the real one, by pid. */
const skewOf = new Map<number, number>();
const hogs: ChildProcess[] = [];
/** A busy loop that ends by itself after 60 s, should the test die before it kills it. */
const HOG = 'const end = Date.now() + 60000; while (Date.now() < end) {}';

before(async () => {
  if (skip) return;
  db = await createTestDatabase('chaos_rate_pacing');
  await createRunsTable(db.pool);
});
after(async () => {
  for (const hog of hogs) hog.kill('SIGKILL');
  await plain.kill();
  await ahead.kill();
  await db?.drop();
});

async function start(fleet: typeof plain, skewMs: number): Promise<SpawnedSupervisor> {
  const s = await fleet.start();
  skewOf.set(s.pid, skewMs);
  return s;
}

/** Enqueues `n` jobs on `queue`, waits for all to be done; the busiest window of real-clock task starts. */
async function measure(queue: string, n: number, count: number) {
  const jobs: JobSpec[] = [];
  for (let i = 0; i < n; i++) jobs.push({ kind: 'flow_record', queue, payload: {} });
  const ids = (await enqueueMany(db.pool, jobs)).map((r) => r.id);
  await until(
    `${n} ${queue} jobs done`,
    async () =>
      (
        await db.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) AND status = 'done'",
          [ids],
        )
      ).rows[0]?.n ?? 0,
    (done) => done === n,
    // A bound for a stuck run, not a speed check: at load 16 (this file's busy loops beside other
    // files) 240 jobs at 40/s were 184 done after 44 s.
    (n / count) * 1000 * 10 + 60_000,
    200,
  );
  const runs = await readRuns(db.pool, queue);
  const starts = runs.map((r) => r.started - (skewOf.get(r.pid) ?? 0));
  const { rows } = await db.pool.query<{ attempts: number }>(
    'SELECT max(attempts)::int AS attempts FROM jobvisor.jobs WHERE id = ANY($1::bigint[])',
    [ids],
  );
  const span = Math.max(...starts) - Math.min(...starts);
  let missed = 0;
  for (const s of [...plain.members, ...ahead.members])
    for (const line of s.logs)
      if (line.msg === 'jobs handed back' && String(line.reason).includes('rate-limit start slot'))
        missed += (line.jobIds as unknown[]).length;
  for (const s of [...plain.members, ...ahead.members]) s.logs.length = 0;
  const busiest = maxStartsInWindow(starts, 1000);
  if (busiest > count) {
    // What a window over the limit held: each start (ms from the window's first) and its process,
    // with the process's skew, to tell a clock's error from a late or early start.
    const sorted = runs.map((r, i) => ({ at: starts[i] as number, pid: r.pid })).sort((a, b) => a.at - b.at);
    const first = sorted.findIndex((s, i) => (sorted[i + busiest - 1]?.at ?? Infinity) - s.at < 1000);
    const window = sorted.slice(first, first + busiest);
    console.log(
      `# the busiest window: ${window.map((s) => `+${s.at - (window[0]?.at ?? 0)} ms pid ${s.pid} (skew ${skewOf.get(s.pid) ?? 0})`).join(', ')}`,
    );
  }
  return {
    runs: runs.length,
    busiest,
    perSecond: (runs.length / (span / 1000)).toFixed(1),
    supervisors: new Set(runs.map((r) => r.pid)).size,
    mostAttempts: rows[0]?.attempts ?? 0,
    missedSlots: missed,
  };
}

describe('rate-limited starts never bunch above the limit', { skip }, () => {
  it(`three supervisors, one ${AHEAD_MS / 1000} s ahead, rateLimit 20/1s: at most 20 task starts in any 1-s window`, async () => {
    await Promise.all([start(plain, 0), start(plain, 0), start(ahead, AHEAD_MS)]);
    const m = await measure('twenty', 200, 20);
    console.log(`one supervisor ${AHEAD_MS} ms ahead, 20/1s: ${JSON.stringify(m)}`);
    assert.equal(m.runs, 200, 'each job ran once');
    assert.equal(m.mostAttempts, 1, 'no attempt was used up by a missed slot');
    assert.equal(m.supervisors, 3, 'all three started jobs');
    assert.ok(m.busiest <= 20, `the busiest 1-s window held ${m.busiest} starts`);
  });

  it('two supervisors starved of CPU by busy loops, rateLimit 40/1s, 240 jobs: at most 40 in any 1-s window', async () => {
    await ahead.kill();
    for (let i = 0; i < 4; i++) hogs.push(spawn(process.execPath, ['-e', HOG], { stdio: 'ignore' }));
    const m = await measure('forty', 240, 40);
    for (const hog of hogs.splice(0)) hog.kill('SIGKILL');
    console.log(`two supervisors beside 4 busy loops on ${cpus().length} cores, 40/1s: ${JSON.stringify(m)}`);
    assert.equal(m.runs, 240, 'each job ran once');
    assert.equal(m.mostAttempts, 1, 'no attempt was used up by a missed slot');
    assert.ok(m.busiest <= 40, `the busiest 1-s window held ${m.busiest} starts`);
  });
});
