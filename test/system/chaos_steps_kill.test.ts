/**
 * Chaos: kill -9 of supervisors at random points of ten-step jobs (issue 46).
 * Two supervisor processes work JOBS jobs of ten durable steps each; at random
 * moments (seeded: CHAOS_SEED replays a storm) one of them is SIGKILLed and a
 * replacement started, until MAX_KILLS kills (of ready supervisors only).
 * Each step's fn logs its call (job, step, attempt) into table step_calls in a
 * transaction of its own, then takes STEP_MS before it returns: the log is the
 * step's side effect. Counted against the
 * records (job_steps):
 *   - every job finishes (done), with one record per step;
 *   - no recorded step runs again: no call of a step in an attempt after the
 *     one that recorded it;
 *   - a step runs again only where a kill fell between its side effect and
 *     its record: a call without a record of its attempt belongs to a run
 *     that did not finish (a killed one: the job went on to a later attempt),
 *     and such a run has at most one (the step the kill fell into).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { prng, report, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { killAll, spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

// 1,000 (the figure) take minutes on a loaded 2-core machine: CHAOS_STEP_JOBS=1000 runs them.
const JOBS = Number(process.env.CHAOS_STEP_JOBS ?? 200);
const STEPS = 10;
const MAX_KILLS = 4;
const STEP_MS = 100;

let db: TestDatabase;
const CONFIG = {
  pool: { maxThreads: 1, dbPoolSize: 5 },
  queues: { default: { concurrency: 25, jobsPerThread: 25 } },
  jobs: { lease: '3s', maxAttempts: 100 },
  reaper: { interval: '300ms' },
  poll: { interval: '500ms' },
  backoff: { base: '50ms', max: '200ms' },
  shutdown: { grace: '2s' },
};
const members: SpawnedSupervisor[] = [];
/** A replacement is not waited for: the storm goes on while it starts. */
async function start(waitReady: boolean): Promise<SpawnedSupervisor> {
  const s = await spawnSupervisor({
    databaseUrl: db.url,
    tasksDir: FIXTURE_TASKS,
    config: CONFIG,
    waitReady,
    readyTimeoutMs: 120_000,
  });
  members.push(s);
  return s;
}

before(async () => {
  db = await createTestDatabase('chaos_steps_kill');
  await db.pool.query('CREATE TABLE step_calls (job_id bigint, name text, attempt int, key text)');
});

after(async () => {
  await killAll(members);
  await db.drop();
});

const doneCount = async () =>
  (await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'")).rows[0]
    ?.n ?? 0;

describe('chaos: kill -9 during ten-step jobs', { timeout: 400_000 }, () => {
  it(`${JOBS} jobs of ${STEPS} steps, supervisors SIGKILLed at random: all done, no recorded step runs again`, async () => {
    const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
    const random = prng(seed);
    // Each step's fn logs its call, takes STEP_MS, logs "<name>:end" and returns: a kill
    // lands between a side effect and its record often enough to be seen.
    const ops = Array.from({ length: STEPS }, (_, i) => ['slow', `s${i}`, STEP_MS]);
    const live: SpawnedSupervisor[] = [await start(true), await start(true)];
    const started = Date.now();
    await enqueueMany(
      db.pool,
      Array.from({ length: JOBS }, () => ({ kind: 'durable', payload: { log: true, ops } })),
    );
    const kills: Array<{ pid: number; atMs: number; done: number }> = [];
    while (kills.length < MAX_KILLS) {
      // Somewhere in the next 0.3–1.8 s of work, but only while jobs are left to kill into.
      const wait = 300 + random() * 1500;
      await new Promise((r) => setTimeout(r, wait));
      const done = await doneCount();
      if (done >= JOBS * 0.9) break;
      // A working supervisor: one that is ready (a replacement may still be starting).
      const ready = live.filter((x) => x.logs.some((l) => l.msg === 'ready'));
      if (ready.length === 0) continue;
      const victim = ready[Math.floor(random() * ready.length)] as SpawnedSupervisor;
      live.splice(live.indexOf(victim), 1);
      process.kill(victim.pid, 'SIGKILL');
      await victim.exited;
      kills.push({ pid: victim.pid, atMs: Date.now() - started, done });
      live.push(await start(false));
    }
    await until('every job done', doneCount, (n) => n === JOBS, 300_000, 250);
    const elapsedMs = Date.now() - started;

    const { rows: statuses } = await db.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM jobvisor.jobs GROUP BY status',
    );
    assert.deepEqual(statuses, [{ status: 'done', n: JOBS }], 'every job done, none dead-lettered');
    const { rows: records } = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM jobvisor.job_steps WHERE kind = 'step' GROUP BY job_id HAVING count(*) <> $1",
      [STEPS],
    );
    assert.equal(records.length, 0, `every job has ${STEPS} records`);

    // A call after the attempt that recorded its step: a recorded step ran again.
    const { rows: after } = await db.pool.query(
      `SELECT c.job_id, c.name, c.attempt, s.attempt AS recorded_in
         FROM step_calls AS c JOIN jobvisor.job_steps AS s ON s.job_id = c.job_id AND s.name = c.name
        WHERE c.attempt > s.attempt LIMIT 5`,
    );
    assert.deepEqual(after, [], 'no recorded step ran again');
    // Calls the record's attempt made exactly once: the run that recorded it called fn once.
    const { rows: recordedOnce } = await db.pool.query(
      `SELECT s.job_id, s.name, count(c.*)::int AS calls
         FROM jobvisor.job_steps AS s
         LEFT JOIN step_calls AS c ON c.job_id = s.job_id AND c.name = s.name AND c.attempt = s.attempt
        WHERE s.kind = 'step' GROUP BY s.job_id, s.name HAVING count(c.*) <> 1 LIMIT 5`,
    );
    assert.deepEqual(recordedOnce, [], "each record's run called its fn once");
    // Calls without a record of their attempt: runs that never finished, one such call each.
    const { rows: lost } = await db.pool.query<{ job_id: string; attempt: number; calls: number; final: number }>(
      `SELECT c.job_id::text, c.attempt, count(*)::int AS calls, j.attempts AS final
         FROM step_calls AS c
         JOIN jobvisor.job_steps AS s ON s.job_id = c.job_id AND s.name = c.name
         JOIN jobvisor.jobs AS j ON j.id = c.job_id
        WHERE c.attempt <> s.attempt
        GROUP BY c.job_id, c.attempt, j.attempts`,
    );
    for (const l of lost) {
      assert.equal(l.calls, 1, `run ${l.attempt} of job ${l.job_id} lost one step's record, not ${l.calls}`);
      assert.ok(l.attempt < l.final, `run ${l.attempt} of job ${l.job_id} was not its last (${l.final})`);
    }
    // Each kill interrupts at most `concurrency` (25) runs, each inside at most one step.
    assert.ok(lost.length <= kills.length * 25, `${lost.length} re-run steps from ${kills.length} kills`);
    assert.ok(kills.length >= 2, `the storm killed ${kills.length} supervisors`);
    assert.ok(lost.length >= 1, 'a kill fell between a side effect and its record at least once');
    const { rows: calls } = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM step_calls WHERE name NOT LIKE '%:end'",
    );
    report('kill -9 during ten-step jobs', {
      seed,
      jobs: JOBS,
      steps: JOBS * STEPS,
      kills,
      fnCalls: calls[0]?.n,
      stepsRunAgain: lost.length,
      elapsedMs,
    });
  });
});
