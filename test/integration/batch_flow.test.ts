/**
 * Flow control with batch tasks, with real supervisors and threads: the claim
 * applies pause, global and per-key limits per job, and a call applies the
 * rate limit's start slots per job. Every job of a call is recorded as a run
 * from inside the call (fixtures/tasks/batch_flow.js); the assertions are
 * computed from those records:
 *   - a paused queue gathers nothing, and a pause hands a gathering back;
 *   - globalConcurrency 3 over two supervisors: at most 3 jobs in calls at once;
 *   - perKeyConcurrency 2: at most 2 jobs of one concurrency key in calls at once;
 *   - rateLimit 5/1s: at most 5 jobs start in any 1-s window, and every job
 *     runs (a gathering that waited maxWait made each rate-limited job miss
 *     its start slot, so none ever ran).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { pauseQueue, resumeQueue } from '../../src/queue/pause.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { report } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createRunsTable, maxOverlap, maxOverlapByKey, maxStartsInWindow, readRuns } from '../helpers/flow.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { clockPasses, until } from '../helpers/poll.ts';

let db: TestDatabase;
const supervisors: Supervisor[] = [];
/** Sizes of the calls made, by queue. */
const sizes = new Map<string, number[]>();

const CONFIG = {
  pool: { maxThreads: 2 },
  queues: {
    paused: { concurrency: 10 },
    global: { concurrency: 10, globalConcurrency: 3 },
    keyed: { concurrency: 10, perKeyConcurrency: 2 },
    rated: { concurrency: 10, rateLimit: { count: 5, period: '1s' } },
  },
  jobs: { timeout: '30s', lease: '30s' },
  poll: { interval: '200ms' },
};

before(async () => {
  db = await createTestDatabase('batch_flow');
  await createRunsTable(db.pool);
  await db.pool.query(`
    CREATE TABLE batch_calls (call serial, kind text, ids bigint[], key text, at timestamptz DEFAULT clock_timestamp());
    CREATE TABLE batch_release (name text);`);
  for (let i = 0; i < 2; i++) {
    const s = startSupervisor(db.url, CONFIG);
    s.events.on('batch:called', ({ queue, size }) => sizes.set(queue, [...(sizes.get(queue) ?? []), size]));
    supervisors.push(s);
  }
  await Promise.all(supervisors.map((s) => s.start()));
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop()));
  await db.drop();
});

async function add(queue: string, payloads: Array<{ ms?: number; key?: string }>, kind = 'batch_flow') {
  const jobs: JobSpec[] = payloads.map((payload) => ({
    kind,
    queue,
    payload,
    ...(payload.key ? { concurrencyKey: payload.key } : {}),
  }));
  return (await enqueueMany(db.pool, jobs)).map((r) => r.id);
}

async function statusOf(ids: string[]) {
  const { rows } = await db.pool.query<{ status: string; attempts: number }>(
    'SELECT status, attempts FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows;
}

const allDone = (ids: string[], what: string, timeoutMs = 30_000) =>
  until(
    what,
    () => statusOf(ids),
    (r) => r.length === ids.length && r.every((j) => j.status === 'done'),
    timeoutMs,
  );

async function callsOf(ids: string[]): Promise<string[][]> {
  const { rows } = await db.pool.query<{ ids: string[] }>(
    'SELECT ids::text[] AS ids FROM batch_calls WHERE ids && $1::bigint[] ORDER BY call',
    [ids],
  );
  return rows.map((r) => r.ids);
}

describe('flow control with batch tasks', () => {
  it('a paused queue gathers nothing; a pause hands a gathering back unstarted', async () => {
    // batch_slow gathers for 3 s: long enough to pause while its jobs gather.
    const gathering = await add('paused', [{}, {}, {}], 'batch_slow');
    await until(
      'the three jobs claimed and gathering',
      () => statusOf(gathering),
      (r) => r.every((j) => j.status === 'running'),
    );
    await pauseQueue(db.pool, 'paused');
    const back = await until(
      'the gathering handed back',
      () => statusOf(gathering),
      (r) => r.every((j) => j.status === 'pending'),
    );
    assert.deepEqual(
      back.map((j) => j.attempts),
      [0, 0, 0],
      'handed back without using an attempt',
    );
    const more = await add('paused', [{}, {}], 'batch_slow');
    // Past the gathering's maxWait (3 s) and many polls: nothing claimed, nothing called.
    await clockPasses('past maxWait while paused', 3_500, 100);
    const ids = [...gathering, ...more];
    assert.ok(
      (await statusOf(ids)).every((j) => j.status === 'pending'),
      'no job of a paused queue is claimed',
    );
    assert.deepEqual(await callsOf(ids), [], 'no call while paused');
    assert.equal(sizes.get('paused'), undefined, 'no batch:called for the paused queue');
    await resumeQueue(db.pool, 'paused');
    await allDone(ids, 'all five done after resume');
    assert.deepEqual((await callsOf(ids)).flat().sort(), [...ids].sort(), 'each passed once');
  });

  it('globalConcurrency 3 over two supervisors: at most 3 jobs in calls at once', async () => {
    const ids = await add(
      'global',
      Array.from({ length: 18 }, () => ({ ms: 300 })),
    );
    await allDone(ids, '18 global jobs done');
    const runs = await readRuns(db.pool, 'global');
    assert.equal(runs.length, 18, 'each job ran once');
    const most = maxOverlap(runs, Date.now());
    assert.ok(most <= 3, `at most 3 jobs at once: ${most}`);
    assert.equal(most, 3, 'the limit was used');
    const called = sizes.get('global') ?? [];
    assert.ok(
      called.every((n) => n <= 3),
      `a call never holds more than the limit: ${JSON.stringify(called)}`,
    );
    assert.ok(
      called.some((n) => n > 1),
      `jobs shared calls: ${JSON.stringify(called)}`,
    );
  });

  it('perKeyConcurrency 2: at most 2 jobs of a key in calls at once', async () => {
    const keys = ['a', 'b', 'c'];
    const ids = await add(
      'keyed',
      Array.from({ length: 18 }, (_, i) => ({ ms: 300, key: keys[i % 3] as string })),
    );
    await allDone(ids, '18 keyed jobs done');
    const runs = await readRuns(db.pool, 'keyed');
    assert.equal(runs.length, 18, 'each job ran once');
    const byKey = maxOverlapByKey(runs, Date.now());
    for (const k of keys) assert.ok((byKey.get(k) ?? 0) <= 2, `key ${k}: ${byKey.get(k)} at once`);
    assert.ok(maxOverlap(runs, Date.now()) > 2, 'keys ran beside each other');
  });

  it('rateLimit 5/1s: at most 5 jobs start in any 1-s window', async () => {
    const enqueuedAt = Date.now();
    const ids = await add(
      'rated',
      Array.from({ length: 20 }, () => ({})),
    );
    // A job that misses its slot (20 ms late) is handed back and claimed again: slow under load.
    await allDone(ids, '20 rated jobs done', 90_000);
    const runs = await readRuns(db.pool, 'rated');
    assert.equal(runs.length, 20, 'each job ran once');
    const starts = runs.map((r) => r.started);
    const most = maxStartsInWindow(starts, 1000);
    assert.ok(most <= 5, `at most 5 starts in a 1-s window: ${most} (${JSON.stringify(starts)})`);
    const spanMs = Math.max(...starts) - Math.min(...starts);
    const called = sizes.get('rated') ?? [];
    report('batch.rateLimit', {
      jobs: 20,
      limit: '5/1s',
      busiestWindow: most,
      startsSpanMs: spanMs,
      allDoneMs: Date.now() - enqueuedAt,
      calls: called.length,
      jobsCalled: called.reduce((a, b) => a + b, 0),
      largestCall: Math.max(...called),
    });
    assert.ok(spanMs >= 3000, `20 starts at 5/s span at least 3 s: ${spanMs} ms`);
  });
});
