/**
 * Chaos: durable steps across a lost lease, with real supervisor processes.
 * Supervisor A runs jobs of a few steps; while every job is inside the fn of
 * its step "b" (or a plain pause before a sleep), A is frozen (SIGSTOP) past
 * its lease, or killed (SIGKILL). Supervisor B reaps the leases and finishes
 * the jobs. Then A comes back (SIGCONT): its fn returns and it tries to
 * record the step, or to record the sleep, on a claim it no longer holds.
 *
 * Counted from inside the task (table step_calls, one row per fn call and per
 * pause) against the records (job_steps):
 *   - a step recorded before the fault never runs again;
 *   - the step the fault fell into runs again (at least once), and its record
 *     is B's, never A's;
 *   - A, woken, records no step and no sleep, and leaves the finished jobs alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { count, report, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { fixtureFleet, killAll, type SpawnedSupervisor } from '../helpers/supervisor.ts';

const JOBS = 6;
const FN_MS = 4000;

let db: TestDatabase;
const fleet = fixtureFleet(() => db.url, {
  pool: { maxThreads: 1, dbPoolSize: 4 },
  queues: { default: { concurrency: JOBS * 2, jobsPerThread: JOBS * 2 } },
  jobs: { lease: '3s' },
  reaper: { interval: '300ms' },
  poll: { interval: '300ms' },
  shutdown: { grace: '2s' },
});

before(async () => {
  db = await createTestDatabase('chaos_steps');
  await db.pool.query('CREATE TABLE step_calls (job_id bigint, name text, attempt int, key text)');
});

after(async () => {
  await fleet.kill();
  await db.drop();
});

/** JOBS jobs stepping a → b (slow) → x (first attempt only) → c, and JOBS jobs doing a → pause → sleep → c. */
async function enqueueJobs(): Promise<{ steps: string[]; sleeps: string[] }> {
  const steps = await enqueueMany(
    db.pool,
    Array.from({ length: JOBS }, () => ({
      kind: 'durable',
      // "x" is taken by a first attempt only: A's, if its record of b were not refused.
      payload: {
        log: true,
        ops: [
          ['step', 'a'],
          ['slow', 'b', FN_MS],
          ['once', 'x'],
          ['step', 'c'],
        ],
      },
    })),
  );
  const sleeps = await enqueueMany(
    db.pool,
    Array.from({ length: JOBS }, () => ({
      kind: 'durable',
      payload: {
        log: true,
        ops: [
          ['step', 'a'],
          ['pause', 'p', FN_MS],
          ['sleep', 'nap', '200ms'],
          ['step', 'c'],
        ],
      },
    })),
  );
  return { steps: steps.map((r) => r.id), sleeps: sleeps.map((r) => r.id) };
}

const callsOf = async (ids: string[], name: string, attempt?: number) =>
  count(
    db.pool,
    'SELECT count(*)::int AS n FROM step_calls WHERE job_id = ANY($1) AND name = $2 AND ($3::int IS NULL OR attempt = $3)',
    [ids, name, attempt ?? null],
  );

const recordsOf = async (ids: string[]) =>
  (
    await db.pool.query(
      `SELECT job_id::text AS id, name, kind, attempt, started_at, finished_at, wake_at
         FROM jobvisor.job_steps WHERE job_id = ANY($1) ORDER BY job_id, name`,
      [ids],
    )
  ).rows as Array<{ id: string; name: string; kind: string; attempt: number }>;

const jobsOf = async (ids: string[]) =>
  (
    await db.pool.query(
      'SELECT id::text AS id, status, run_at, finished_at FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
      [ids],
    )
  ).rows as Array<{ id: string; status: string; run_at: Date; finished_at: Date }>;

/** A holds every job inside b's fn or the pause; `fault` takes it away; B finishes the jobs. */
async function loseLease(fault: (a: SpawnedSupervisor) => void) {
  const a = await fleet.start();
  const { steps, sleeps } = await enqueueJobs();
  const all = [...steps, ...sleeps];
  await until(
    'A is inside b (or the pause) of every job',
    async () => (await callsOf(steps, 'b', 1)) + (await callsOf(sleeps, 'p', 1)),
    (n) => n === JOBS * 2,
    60_000,
    50,
  );
  fault(a);
  const faultAt = Date.now();
  const b = await fleet.start();
  const done = await until(
    'B finishes every job',
    () => jobsOf(all),
    (rows) => rows.every((r) => r.status === 'done'),
    60_000,
    100,
  );
  return { a, b, steps, sleeps, all, done, rescuedMs: Date.now() - faultAt };
}

/** What must hold after B: a and c ran once per job, b's and nap's records are B's. */
async function assertRecords(steps: string[], sleeps: string[], all: string[]) {
  assert.equal(await callsOf(all, 'a'), all.length, 'a, recorded before the fault, never ran again');
  assert.equal(await callsOf(all, 'c'), all.length, 'c ran once per job');
  assert.ok((await callsOf(steps, 'b')) >= JOBS * 2, "b's fn ran again: the fault fell inside it");
  const recs = await recordsOf(all);
  const byJob = new Map<string, string[]>();
  for (const r of recs) byJob.set(r.id, [...(byJob.get(r.id) ?? []), r.name]);
  for (const id of steps) assert.deepEqual(byJob.get(id), ['a', 'b', 'c'], `one record per step of job ${id}`);
  for (const id of sleeps) assert.deepEqual(byJob.get(id), ['a', 'c', 'nap'], `one record per step of job ${id}`);
  for (const r of recs.filter((x) => x.name === 'b' || x.name === 'nap'))
    assert.ok(r.attempt >= 2, `${r.name} of job ${r.id} was recorded by B's run, not A's (attempt ${r.attempt})`);
}

describe('durable steps when a supervisor loses its lease', () => {
  it('frozen past its lease (SIGSTOP): once woken it records no step and no sleep', async () => {
    const { a, b, steps, sleeps, all, done, rescuedMs } = await loseLease((s) => process.kill(s.pid, 'SIGSTOP'));
    await assertRecords(steps, sleeps, all);
    const before = await recordsOf(all);
    process.kill(a.pid, 'SIGCONT');
    // A's fn of b returns and logs "b:end" before its record is tried; its pause ends before its sleep.
    await until(
      "A's b and pause have run to their end",
      () => callsOf(steps, 'b:end', 1),
      (n) => n === JOBS,
      30_000,
      50,
    );
    await until(
      'A has given up every job (lease lost, or its writes fenced)',
      () =>
        a.logs
          .filter(
            (l) =>
              (l.msg === 'lease lost, job stopped' ||
                l.msg === 'outcome not written: this supervisor no longer owns the attempt') &&
              Array.isArray(l.jobIds),
          )
          .flatMap((l) => l.jobIds as string[]),
      (ids) => all.every((id) => ids.includes(id)),
      30_000,
      100,
    );
    assert.deepEqual(await recordsOf(all), before, 'A, woken, recorded nothing: no step, no sleep');
    const rows = await jobsOf(all);
    assert.deepEqual(
      rows.map((r) => [r.id, r.status, r.finished_at?.getTime()]),
      done.map((r) => [r.id, r.status, r.finished_at?.getTime()]),
      'the finished jobs stay finished: no sleep of A put one back to pending',
    );
    await killAll([a, b]);
    report('steps: frozen supervisor', { jobs: all.length, rescuedMs, records: before.length });
  });

  it('killed (SIGKILL) inside a step: the next supervisor replays recorded steps and reruns only that one', async () => {
    await db.pool.query('TRUNCATE step_calls');
    const { b, steps, sleeps, all, rescuedMs } = await loseLease((s) => process.kill(s.pid, 'SIGKILL'));
    await assertRecords(steps, sleeps, all);
    assert.equal(await callsOf(steps, 'b'), JOBS * 2, "b's fn ran exactly twice per job: A's, cut short, and B's");
    await killAll([b]);
    report('steps: killed supervisor', { jobs: all.length, rescuedMs });
  });
});
