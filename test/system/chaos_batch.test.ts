/**
 * Chaos with batch tasks, real supervisor processes and a real PostgreSQL
 * (fixtures/tasks/batch_chaos.js records every job of every call from inside
 * the call; a trigger records every write that ends a running attempt, with
 * its transaction):
 *   - kill -9 of a supervisor in the middle of a call of 20 jobs: after its
 *     leases are reaped every job runs again and ends done; none is lost, none
 *     done twice, each charged one attempt for the killed call and one for
 *     the call that finished it;
 *   - SIGSTOP past the lease while another supervisor takes the jobs: woken
 *     (SIGCONT), the frozen one writes no outcome for any job of its call;
 *   - one job of a 100-job call failing every time: the 99 done and its retry
 *     in one transaction, then it alone is retried until it is dead-lettered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { count, report, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { fixtureFleet, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const LEASE = '3s';
let db: TestDatabase;
const fleet = fixtureFleet(() => db.url, {
  pool: { maxThreads: 1, dbPoolSize: 4 },
  queues: { default: { concurrency: 100 } },
  jobs: { lease: LEASE, timeout: '60s' },
  reaper: { interval: '300ms' },
  poll: { interval: '300ms' },
  backoff: { base: '100ms', max: '200ms', jitter: 0 },
  shutdown: { grace: '2s' },
});

before(async () => {
  db = await createTestDatabase('chaos_batch');
  await db.pool.query(`
    CREATE SEQUENCE batch_run_calls;
    CREATE TABLE batch_runs (job_id bigint, attempt int, pid int, call bigint);
    -- Every write that ends a running attempt: which job, to what, in which transaction.
    CREATE TABLE attempt_ends (job_id bigint, status text, tx bigint, at timestamptz DEFAULT clock_timestamp());
    CREATE FUNCTION log_attempt_end() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO attempt_ends (job_id, status, tx) VALUES (NEW.id, NEW.status, txid_current()); RETURN NULL; END $$;
    CREATE TRIGGER jobs_attempt_end AFTER UPDATE OF status ON jobvisor.jobs
      FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status <> 'running') EXECUTE FUNCTION log_attempt_end();`);
});

after(async () => {
  await fleet.kill();
  await db.drop();
});

async function add(n: number, payload: (i: number) => Record<string, unknown>, maxAttempts = 5): Promise<string[]> {
  const jobs = Array.from({ length: n }, (_, i) => ({ kind: 'batch_chaos', payload: payload(i), maxAttempts }));
  return (await enqueueMany(db.pool, jobs)).map((r) => r.id);
}

async function rowsOf(ids: string[]) {
  const { rows } = await db.pool.query<{
    id: string;
    status: string;
    attempts: number;
    result: { pid: number } | null;
    errors: Array<{ error: string }>;
    locked_by: string | null;
    finished_at: Date | null;
  }>(
    'SELECT id::text, status, attempts, result, errors, locked_by, finished_at FROM jobvisor.jobs WHERE id = ANY($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows;
}

/** Calls that passed any of `ids`: pid → the calls' job id lists. */
async function runsOf(ids: string[]) {
  const { rows } = await db.pool.query<{ pid: number; call: string; ids: string[]; attempts: number[] }>(
    `SELECT pid, call::text, array_agg(job_id::text ORDER BY job_id) AS ids, array_agg(attempt ORDER BY job_id) AS attempts
       FROM batch_runs WHERE job_id = ANY($1::bigint[]) GROUP BY pid, call ORDER BY call`,
    [ids],
  );
  return rows;
}

async function endsOf(ids: string[]) {
  const { rows } = await db.pool.query<{ job_id: string; status: string; tx: string }>(
    'SELECT job_id::text, status, tx::text FROM attempt_ends WHERE job_id = ANY($1::bigint[]) ORDER BY at, job_id',
    [ids],
  );
  return rows;
}

/** Waits until `s` runs one call holding every job of `ids`. */
async function callStarted(s: SpawnedSupervisor, ids: string[]): Promise<void> {
  await until(
    `supervisor ${s.pid} runs one call of all ${ids.length} jobs`,
    () => runsOf(ids),
    (calls) => calls.some((c) => c.pid === s.pid && c.ids.length === ids.length),
    60_000,
    100,
  );
}

describe('batch calls under faults', () => {
  it('kill -9 mid-call: every job runs again after reaping, none lost, none done twice', async () => {
    const a = await fleet.start();
    const ids = await add(20, () => ({ firstMs: 60_000 }));
    await callStarted(a, ids);
    const killedAt = Date.now();
    await a.stop('SIGKILL');
    const b = await fleet.start();
    const rows = await until(
      'every job done',
      () => rowsOf(ids),
      (r) => r.every((j) => j.status === 'done'),
      90_000,
      100,
    );
    const recoveredMs = Date.now() - killedAt;
    const calls = await runsOf(ids);
    const byA = calls.filter((c) => c.pid === a.pid);
    const byB = calls.filter((c) => c.pid === b.pid);
    assert.equal(byA.length, 1, 'the killed supervisor made one call');
    assert.deepEqual(
      byB.flatMap((c) => c.ids).sort(),
      [...ids].sort(),
      'after reaping, every job of the killed call ran again, once',
    );
    assert.ok(
      byB.flatMap((c) => c.attempts).every((n) => n === 2),
      'the rerun is each job’s second attempt',
    );
    for (const j of rows) {
      assert.equal(j.attempts, 2, `job ${j.id}: one attempt for the killed call, one for the rerun`);
      assert.equal(j.result?.pid, b.pid, `job ${j.id}'s result is the rerun's`);
      assert.equal(j.errors.length, 1, `job ${j.id}: one failed attempt on record`);
      assert.match(j.errors[0]?.error ?? '', /lease expired/);
    }
    const ends = await endsOf(ids);
    assert.equal(ends.filter((e) => e.status === 'done').length, 20, 'each job done once in the record');
    report('batch.kill9', { jobs: 20, lease: LEASE, recoveredAfterKillMs: recoveredMs, callsByRescuer: byB.length });
    await b.stop('SIGTERM');
  });

  it('SIGSTOP past the lease: woken, the frozen supervisor writes no outcome for any job', async () => {
    const a = await fleet.start();
    // 6 s: past the lease (3 s); the call ends by itself while B finishes the jobs, then A is woken.
    const ids = await add(10, () => ({ firstMs: 6_000 }));
    await callStarted(a, ids);
    process.kill(a.pid, 'SIGSTOP');
    const frozenAt = Date.now();
    const b = await fleet.start();
    const finished = await until(
      'B finishes every job',
      () => rowsOf(ids),
      (r) => r.every((j) => j.status === 'done' && String(j.locked_by).includes(`:${b.pid}:`)),
      90_000,
      100,
    );
    await until(
      "A's call would have ended",
      () => Date.now() - frozenAt,
      (ms) => ms > 7_000,
      30_000,
      100,
    );
    process.kill(a.pid, 'SIGCONT');
    // A notices: its heartbeat finds every lease gone, or its outcomes are refused.
    const gaveUp = () => {
      const lost = new Set<string>();
      for (const line of a.logs) {
        if (
          line.msg === 'lease lost, job stopped' ||
          line.msg === 'outcome not written: this supervisor no longer owns the attempt'
        )
          for (const id of (line.jobIds as string[] | undefined) ?? []) lost.add(String(id));
      }
      return lost;
    };
    await until(
      'A has given up every job',
      () => gaveUp(),
      (lost) => ids.every((id) => lost.has(id)),
      30_000,
      100,
    );
    assert.equal(await a.stop('SIGTERM'), 0, 'A still drains and exits 0');
    assert.deepEqual(await rowsOf(ids), finished, 'nothing A wrote changed the jobs');
    const ends = await endsOf(ids);
    assert.equal(ends.filter((e) => e.status === 'done').length, 10, 'done once each, by B');
    assert.equal(
      await count(db.pool, 'SELECT count(*)::int AS n FROM batch_runs WHERE job_id = ANY($1::bigint[]) AND pid = $2', [
        ids,
        b.pid,
      ]),
      10,
      'B ran each job once',
    );
    await b.stop('SIGTERM');
  });

  it('1 of 100 failing: 99 done and its retry in one write, then it alone is retried to the dead letter', async () => {
    const s = await fleet.start();
    const bad = 37;
    const ids = await add(100, (i) => (i === bad ? { fail: true } : {}), 3);
    const badId = ids[bad] as string;
    const rows = await until(
      'every job settled',
      () => rowsOf(ids),
      (r) => r.every((j) => j.status === 'done' || j.status === 'failed'),
      90_000,
      100,
    );
    const calls = await runsOf(ids);
    assert.equal(calls[0]?.ids.length, 100, `the first call held all 100: ${calls.map((c) => c.ids.length).join(',')}`);
    assert.deepEqual(
      calls.slice(1).map((c) => c.ids),
      [[badId], [badId]],
      'only the failing job was called again, once per attempt',
    );
    const ends = await endsOf(ids);
    const first = ends.filter((e) => e.tx === ends[0]?.tx);
    assert.equal(first.length, 100, "the first call's outcomes are one transaction");
    assert.equal(first.filter((e) => e.status === 'done').length, 99);
    assert.deepEqual(
      first.filter((e) => e.job_id === badId).map((e) => e.status),
      ['pending'],
      'the failing job retried in the same write',
    );
    assert.deepEqual(
      ends.filter((e) => e.job_id === badId).map((e) => e.status),
      ['pending', 'pending', 'failed'],
    );
    const badRow = rows.find((j) => j.id === badId);
    assert.equal(badRow?.status, 'failed', 'dead-lettered after its 3 attempts');
    assert.equal(badRow?.attempts, 3);
    assert.ok(
      rows.filter((j) => j.id !== badId).every((j) => j.status === 'done' && j.attempts === 1),
      '99 done on their first attempt',
    );
    await s.stop('SIGTERM');
  });
});
