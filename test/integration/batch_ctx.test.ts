/**
 * What a batch call shares and what stays per job, in a real supervisor with
 * real threads (fixtures/tasks/batch_ctx.js): the call's ctx.signal fires on
 * its timeout (every job fails that attempt, retried on its own), when every
 * job's lease was lost (nothing written), and at shutdown after the grace
 * (every job handed back); the heartbeat renews every job's lease while a call
 * runs past it; each job's progress is stored on that job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const reaped: string[] = [];

const file = supervisedFile(
  'batch_ctx',
  {
    queues: { default: { concurrency: 20 }, short: { concurrency: 10, timeout: '1500ms' } },
    jobs: { timeout: '30s', lease: '3s' },
    reaper: { interval: '500ms' },
    backoff: { base: '60s', max: '60s', jitter: 0 },
    shutdown: { grace: '1s' },
    pool: { maxThreads: 2 },
  },
  {
    prepare: async (db) => {
      await db.pool.query(`
      CREATE TABLE batch_calls (call serial, kind text, ids bigint[], key text, at timestamptz DEFAULT clock_timestamp());
      CREATE TABLE batch_release (name text);
      CREATE TABLE batch_signals (ids bigint[], name text, message text);`);
    },
    beforeStart: (supervisor) => {
      supervisor.events.on('lease:reaped', ({ jobs }) => reaped.push(...jobs.map((j) => String(j.id))));
    },
  },
);

type Payload = { do: 'hang' | 'long' | 'progress'; n?: number; ms?: number };

async function add(payloads: Payload[], queue = 'default'): Promise<string[]> {
  const jobs = payloads.map((payload) => ({ kind: 'batch_ctx', queue, payload, maxAttempts: 3 }));
  return (await enqueueMany(file.db.pool, jobs)).map((r) => r.id);
}

async function jobsOf(ids: string[]) {
  const { rows } = await file.db.pool.query<{
    id: string;
    status: string;
    attempts: number;
    last_error: string | null;
    locked_by: string | null;
    locked_until: Date | null;
    progress: unknown;
  }>(
    'SELECT id::text, status, attempts, last_error, locked_by, locked_until, progress FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows;
}

const untilJobs = (ids: string[], what: string, check: (r: Awaited<ReturnType<typeof jobsOf>>) => boolean) =>
  until(what, () => jobsOf(ids), check, 30_000);

async function callsOf(ids: string[]): Promise<string[][]> {
  const { rows } = await file.db.pool.query<{ ids: string[] }>(
    'SELECT ids::text[] AS ids FROM batch_calls WHERE ids && $1::bigint[] ORDER BY call',
    [ids],
  );
  return rows.map((r) => r.ids);
}

async function signalsOf(ids: string[]) {
  const { rows } = await file.db.pool.query<{ name: string; message: string }>(
    'SELECT name, message FROM batch_signals WHERE ids && $1::bigint[]',
    [ids],
  );
  return rows;
}

describe('a batch call: timeout, lease, signal and progress', () => {
  it("fires ctx.signal on the call's timeout and fails every job's attempt", async () => {
    const ids = await add([{ do: 'hang' }, { do: 'hang' }, { do: 'hang' }], 'short');
    const rows = await untilJobs(ids, 'every job failed its attempt', (r) =>
      r.every((j) => j.status === 'pending' && j.attempts === 1),
    );
    for (const j of rows) assert.match(j.last_error ?? '', /timed out/, `job ${j.id}'s error`);
    assert.deepEqual(await callsOf(ids), [ids], 'one call');
    assert.deepEqual(await signalsOf(ids), [{ name: 'TimeoutError', message: 'job timed out' }]);
  });

  it("renews every job's lease while a call runs past it", async () => {
    // 7 s against a lease of 3 s: without renewal the reaper (every 500 ms) takes the jobs back.
    const ids = await add([0, 1, 2].map((n) => ({ do: 'long', n, ms: 7_000 })));
    const first = await untilJobs(ids, 'the call running', (r) => r.every((j) => j.status === 'running'));
    await until(
      'the call started',
      () => callsOf(ids),
      (c) => c.length === 1,
    );
    const leaseOf = (r: typeof first) => Math.min(...r.map((j) => (j.locked_until as Date).getTime()));
    const renewed = await untilJobs(
      ids,
      'every lease renewed past its first end',
      (r) =>
        r.every((j) => j.status === 'running') &&
        leaseOf(r) > Math.max(...first.map((j) => (j.locked_until as Date).getTime())),
    );
    assert.equal(renewed.length, 3);
    const rows = await untilJobs(ids, 'all done', (r) => r.every((j) => j.status === 'done'));
    assert.deepEqual(
      rows.map((j) => j.attempts),
      [1, 1, 1],
      'one attempt each',
    );
    assert.deepEqual(await callsOf(ids), [ids], 'one call, never run again');
    assert.deepEqual(
      reaped.filter((id) => ids.includes(id)),
      [],
      'no lease reaped',
    );
  });

  it('stores each job its own progress', async () => {
    const ids = await add([7, 8, 9].map((n) => ({ do: 'progress', n })));
    const rows = await untilJobs(ids, 'every job shows its progress', (r) => r.every((j) => j.progress !== null));
    assert.deepEqual(
      rows.map((j) => j.progress),
      [{ n: 7 }, { n: 8 }, { n: 9 }],
    );
    assert.ok(rows.every((j) => j.status === 'running'));
    await file.db.pool.query("INSERT INTO batch_release VALUES ('progress')");
    const done = await untilJobs(ids, 'all done', (r) => r.every((j) => j.status === 'done'));
    assert.deepEqual(
      done.map((j) => j.progress),
      [{ n: 7 }, { n: 8 }, { n: 9 }],
    );
  });

  it("fires ctx.signal when every job's lease was lost, and writes nothing", async () => {
    const ids = await add([{ do: 'hang' }, { do: 'hang' }]);
    await until(
      'the call started',
      () => callsOf(ids),
      (c) => c.length === 1,
    );
    // Another file.supervisor took both jobs over (their leases had run out there).
    await file.db.pool.query(
      "UPDATE jobvisor.jobs SET locked_by = 'elsewhere', lease_token = lease_token + 1000 WHERE id = ANY($1::bigint[])",
      [ids],
    );
    const [signal] = await until(
      'the call aborted',
      () => signalsOf(ids),
      (s) => s.length === 1,
    );
    assert.deepEqual(signal, { name: 'AbortError', message: 'lease lost' });
    const rows = await jobsOf(ids);
    for (const j of rows) {
      assert.equal(j.status, 'running', 'left to the new owner');
      assert.equal(j.locked_by, 'elsewhere');
      assert.equal(j.last_error, null, 'no outcome written');
    }
    await file.db.pool.query("UPDATE jobvisor.jobs SET status = 'cancelled' WHERE id = ANY($1::bigint[])", [ids]);
  });

  it('fires ctx.signal at shutdown after the grace, and hands every job back', async () => {
    const ids = await add([{ do: 'hang' }, { do: 'hang' }]);
    await until(
      'the call started',
      () => callsOf(ids),
      (c) => c.length === 1,
    );
    await file.supervisor.stop();
    assert.deepEqual(await signalsOf(ids), [{ name: 'AbortError', message: 'supervisor shutting down' }]);
    const rows = await jobsOf(ids);
    for (const j of rows) assert.equal(j.status, 'pending', `job ${j.id} handed back`);
    assert.deepEqual(
      rows.map((j) => j.attempts),
      [0, 0],
      'without using an attempt',
    );
  });
});
