/**
 * Chaos for what tasks report back, with real supervisor processes: a
 * supervisor frozen (SIGSTOP) past its lease while its task has reported
 * progress; another supervisor runs the job again and stores its result and
 * progress; the frozen one, resumed (SIGCONT), finishes its stale run and can
 * overwrite neither. At least once: the result kept is the later run's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';
import { fixtureFleet } from '../helpers/supervisor.ts';

let db: TestDatabase;

const CONFIG = {
  pool: { maxThreads: 1 },
  queues: { default: { concurrency: 4, jobsPerThread: 4 } },
  jobs: { lease: '3s' },
  reaper: { interval: '500ms' },
  poll: { interval: '500ms' },
  shutdown: { grace: '5s' },
};

const fleet = fixtureFleet(() => db.url, CONFIG);
const supervisor = () => fleet.start();

before(async () => {
  db = await createTestDatabase('chaos_reports');
  await db.pool.query('CREATE TABLE report_gate (job_id bigint)');
});

after(async () => {
  await fleet.kill();
  await db.drop();
});

const job = async (id: string) =>
  (await db.pool.query('SELECT status, attempts, result, progress FROM jobvisor.jobs WHERE id = $1', [id])).rows[0];

describe('chaos: reports of a stale run', () => {
  it('a supervisor frozen past its lease cannot overwrite the result and progress of the run that replaced it', async () => {
    const stale = await supervisor();
    const { id } = await enqueue(db.pool, 'report', { byAttempt: true, hold: true });
    await until(
      'the first run reported progress',
      () => job(id),
      (r) => r.progress?.attempt === 1,
      30_000,
    );
    process.kill(stale.pid, 'SIGSTOP');
    const rescuer = await supervisor();
    await until(
      'the second run reported progress',
      () => job(id),
      (r) => r.progress?.attempt === 2 && r.status === 'running',
      30_000,
    );
    await db.pool.query('INSERT INTO report_gate VALUES ($1)', [id]);
    const done = await until(
      'done by the rescuer',
      () => job(id),
      (r) => r.status === 'done',
      30_000,
    );
    assert.deepEqual([done.attempts, done.result, done.progress], [2, { attempt: 2 }, { attempt: 2 }]);
    // Resumed, the stale run sees the gate open and finishes: its outcome is dropped or fenced off.
    process.kill(stale.pid, 'SIGCONT');
    await stale.waitForLog(/lease lost, job stopped|no longer owns the attempt/, 30_000);
    assert.deepEqual(await job(id), done, 'nothing of the stale run was written');
    await rescuer.stop('SIGTERM');
  });
});
