/**
 * Pause and resume with real supervisor processes: a pause during a burst
 * stops every start of that queue within 1 s of pauseQueue returning (claimed
 * jobs not yet started are handed back, attempts untouched); the pause
 * survives a restart; resume runs the rest; a pause whose notification is
 * lost is found by the poll; stats, the CLI and the jobvisor_queue_paused
 * metric show it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { pauseQueue, resumeQueue, listQueues } from '../../src/queue/pause.ts';
import { httpGet, until } from '../helpers/chaos/measure.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createRunsTable, readRuns } from '../helpers/flow.ts';
import { fixtureFleet } from '../helpers/supervisor.ts';

const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs: number) =>
  until(what, check, (ok) => ok, timeoutMs);

let db: TestDatabase;

const CONFIG = {
  pool: { maxThreads: 1, dbPoolSize: 5 },
  // Prefetch on (the default for shared threads): claimed-ahead jobs must be handed back on pause.
  queues: { mail: { concurrency: 20, jobsPerThread: 20 }, other: { concurrency: 2 } },
  poll: { interval: '1s' },
};

const fleet = fixtureFleet(() => db.url, CONFIG);
const supervisor = () => fleet.start();

before(async () => {
  db = await createTestDatabase('flow_pause');
  await createRunsTable(db.pool);
});
after(async () => {
  await fleet.kill();
  await db.drop();
});

async function countOf(sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(sql, values);
  return rows[0]?.n ?? 0;
}

describe('pause and resume', () => {
  it('the CLI pauses and resumes by name and refuses a bad one', async () => {
    const paused = await runCliInProcess(db.url, ['queues', 'pause', 'reports']);
    assert.equal(paused.code, 0, paused.stderr);
    assert.equal((await listQueues(db.pool)).find((q) => q.queue === 'reports')?.paused, true);
    assert.equal((await runCliInProcess(db.url, ['queues', 'resume', 'reports'])).code, 0);
    assert.equal((await listQueues(db.pool)).find((q) => q.queue === 'reports')?.paused, false);
    const bad = await runCliInProcess(db.url, ['queues', 'pause', 'no.dots']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /queue "no\.dots" is not valid/);
    assert.equal((await runCliInProcess(db.url, ['queues', 'pause'])).code, 2);
  });

  it('a pause during a burst: nothing starts more than 1 s after it returns; it survives a restart; resume runs the rest', async () => {
    const [a, b] = await Promise.all([supervisor(), supervisor()]);
    const jobs: JobSpec[] = [];
    for (let i = 0; i < 4000; i++) jobs.push({ kind: 'flow_record', queue: 'mail', payload: { ms: 20 } });
    await enqueueMany(db.pool, jobs);
    await waitFor(
      '200 mail jobs ran',
      async () => (await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'mail'")) >= 200,
      30_000,
    );
    await pauseQueue(db.pool, 'mail');
    const pausedAt = Date.now();
    // Claimed-ahead jobs come back as pending; what was running finishes.
    await waitFor(
      'nothing left running after the pause',
      async () => (await countOf("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running'")) === 0,
      20_000,
    );
    const late = (await readRuns(db.pool, 'mail')).filter((r) => r.started > pausedAt + 1000);
    assert.deepEqual(late, [], 'no job of the paused queue started more than 1 s after pauseQueue returned');
    const pending = await countOf(
      "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'mail' AND status = 'pending'",
    );
    assert.ok(pending > 0, 'the burst was cut short');
    const used = await countOf(
      "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'mail' AND status = 'pending' AND attempts > 0",
    );
    assert.equal(used, 0, 'handed-back jobs keep their attempts');

    // Restart both: the pause is in the database.
    await Promise.all([a.stop(), b.stop()]);
    const c = await supervisor();
    const ranBefore = await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'mail'");
    await enqueueMany(db.pool, [{ kind: 'flow_record', queue: 'other', payload: {} }]);
    await waitFor(
      "the other queue's job ran",
      async () => (await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'other'")) === 1,
      20_000,
    );
    assert.equal(await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'mail'"), ranBefore);
    const metrics = await httpGet(c.metricsPort, '/metrics');
    assert.match(metrics.body, /jobvisor_queue_paused\{queue="mail"\} 1/);
    assert.match(metrics.body, /jobvisor_queue_paused\{queue="other"\} 0/);

    const cli = await runCliInProcess(db.url, ['queues', 'list', '--json']);
    assert.equal(cli.code, 0, cli.stderr);
    const listed = JSON.parse(cli.stdout) as Array<{ queue: string; paused: boolean }>;
    assert.equal(listed.find((q) => q.queue === 'mail')?.paused, true);
    const stats = await runCliInProcess(db.url, ['stats', '--json']);
    assert.deepEqual((JSON.parse(stats.stdout) as { pausedQueues: string[] }).pausedQueues, ['mail']);

    await resumeQueue(db.pool, 'mail');
    await waitFor(
      'every mail job done after resume',
      async () =>
        (await countOf("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'mail' AND status = 'done'")) ===
        4000,
      60_000,
    );
    assert.equal((await listQueues(db.pool)).find((q) => q.queue === 'mail')?.paused, false);
    await waitFor(
      'the paused gauge back at 0',
      async () => /jobvisor_queue_paused\{queue="mail"\} 0/.test((await httpGet(c.metricsPort, '/metrics')).body),
      5000,
    );

    // A lost notification (the trigger off): the once-a-second read still finds the pause.
    await db.pool.query('ALTER TABLE jobvisor.queues DISABLE TRIGGER queues_notify');
    try {
      await db.pool.query("UPDATE jobvisor.queues SET paused = true WHERE queue = 'mail'");
      await waitFor(
        'the poll found the pause',
        async () => /jobvisor_queue_paused\{queue="mail"\} 1/.test((await httpGet(c.metricsPort, '/metrics')).body),
        5000,
      );
    } finally {
      await db.pool.query('ALTER TABLE jobvisor.queues ENABLE TRIGGER queues_notify');
    }
    const mailRuns = await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'mail'");
    await enqueueMany(db.pool, [
      { kind: 'flow_record', queue: 'mail', payload: {} },
      { kind: 'flow_record', queue: 'other', payload: {} },
    ]);
    await waitFor(
      "the other queue's second job ran",
      async () => (await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'other'")) === 2,
      20_000,
    );
    assert.equal(await countOf("SELECT count(*)::int AS n FROM flow_runs WHERE queue = 'mail'"), mailRuns);
  });
});
