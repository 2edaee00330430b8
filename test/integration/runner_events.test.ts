/**
 * What `runner.events` listeners receive: the documented JobRef of each job
 * (id, queue, kind, attempt), never the claimed row the supervisor works
 * with (its claim token, its payload). A real runner, with real threads,
 * takes jobs through every outcome that names jobs: started, completed,
 * retried, dead, snoozed, timed out, thread died, lease lost, released.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { run, type Events, type Runner } from '../../src/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

const JOB_REF_KEYS = ['attempt', 'id', 'kind', 'queue'];
/** In every payload: a listener that saw a payload would hold this. */
const MARK = 'payload-mark-7f3e';

let db: TestDatabase;
let runner: Runner | undefined;

before(async () => {
  db = await createTestDatabase('runner_events');
  await db.pool.query('CREATE TABLE naps (job_id bigint, attempt int)');
});

after(async () => {
  await runner?.stop();
  await db.drop();
});

type Seen = Array<{ event: keyof Events; refs: unknown[]; args: unknown }>;

/** Records every job a listener of a job-naming event is handed. */
function listen(r: Runner): Seen {
  const seen: Seen = [];
  const named: Array<keyof Events> = [
    'job:started',
    'job:completed',
    'job:retried',
    'job:dead',
    'job:snoozed',
    'job:released',
    'job:fenced',
    'job:timeout',
    'lease:lost',
    'thread:died',
  ];
  for (const event of named)
    r.events.on(event, (arg: { jobs?: unknown[]; job?: unknown }) => {
      seen.push({ event, refs: arg.jobs ?? [arg.job], args: arg });
    });
  return seen;
}

describe('runner.events', () => {
  it('hand listeners JobRefs with exactly the documented keys, and neither claim tokens nor payloads', async () => {
    runner = await run({
      pool: db.pool,
      connectionString: db.url,
      tasksDir: FIXTURE_TASKS,
      queues: { default: { concurrency: 10 }, slow: { concurrency: 2, timeout: '300ms' } },
      jobs: { lease: '3s' },
      backoff: { base: '10ms', max: '10ms' },
      shutdown: { grace: '200ms' },
      log: { level: 'silent' },
    });
    const seen = listen(runner);
    const insert = async (kind: string, payload: Record<string, unknown>, queue = 'default', maxAttempts = 3) =>
      (
        await db.pool.query<{ id: string }>(
          'INSERT INTO jobvisor.jobs (kind, queue, payload, max_attempts) VALUES ($1, $2, $3, $4) RETURNING id',
          [kind, queue, { ...payload, mark: MARK }, maxAttempts],
        )
      ).rows[0]?.id as string;
    const first = {
      done: await insert('chaos_noop', {}),
      failing: await insert('fail', {}, 'default', 2),
      permanent: await insert('permanent', {}),
      snooze: await insert('snooze', { delay: 10, times: 1 }),
      timeout: await insert('nap', { ms: 10_000 }, 'slow', 1),
      died: await insert('exit', {}, 'default', 1),
    };
    const has = (event: keyof Events, id: string) =>
      seen.some((s) => s.event === event && s.refs.some((r) => (r as { id: string }).id === id));
    // The long runs start once the exit job's thread has died: a run on that thread is handed
    // back when it dies, and one re-queued by SQL just then ends with its write refused by the
    // fence ('job:fenced'), never with the 'lease:lost' the heartbeat reports below.
    await until(
      'the exit job to take its thread down',
      () => has('thread:died', first.died),
      (died) => died,
      30_000,
    );
    const ids = {
      ...first,
      requeued: await insert('nap', { ms: 60_000 }),
      released: await insert('nap', { ms: 60_000 }),
    };
    const status = async (id: string) =>
      (
        await db.pool.query<{ status: string; attempts: number }>(
          'SELECT status, attempts FROM jobvisor.jobs WHERE id = $1',
          [id],
        )
      ).rows[0];
    // A running job re-queued by plain SQL: claimed again here, the old run's lease is lost.
    await until(
      'the job to re-queue runs',
      () => status(ids.requeued),
      (r) => r?.status === 'running',
      30_000,
    );
    await db.pool.query("UPDATE jobvisor.jobs SET status = 'pending', attempts = 0 WHERE id = $1", [ids.requeued]);
    await until(
      'every outcome reported',
      () =>
        Object.entries({
          completed: has('job:completed', ids.done),
          retried: has('job:retried', ids.failing),
          dead_failing: has('job:dead', ids.failing),
          dead_permanent: has('job:dead', ids.permanent),
          snoozed: has('job:snoozed', ids.snooze),
          completed_snooze: has('job:completed', ids.snooze),
          timeout: has('job:timeout', ids.timeout),
          thread_died: has('thread:died', ids.died),
          started_released: has('job:started', ids.released),
          // The re-queued run: stopped, its lease reported lost once it has ended.
          lease_lost: has('lease:lost', ids.requeued),
        })
          .filter(([, ok]) => !ok)
          .map(([name]) => name),
      (missing) => missing.length === 0,
      60_000,
    );
    // Shutdown with a job running past the grace: it is handed back.
    await runner.stop();
    runner = undefined;
    assert.ok(has('job:released', ids.released), 'the running job was released at shutdown');

    const events = new Set(seen.map((s) => s.event));
    for (const e of [
      'job:started',
      'job:completed',
      'job:retried',
      'job:dead',
      'job:snoozed',
      'job:timeout',
      'thread:died',
      'job:released',
      'lease:lost',
    ] as const)
      assert.ok(events.has(e), `${e} was seen`);
    for (const { event, refs } of seen)
      for (const ref of refs) {
        assert.deepEqual(Object.keys(ref as object).sort(), JOB_REF_KEYS, `${event}: ${JSON.stringify(ref)}`);
        const r = ref as Record<string, unknown>;
        assert.ok(
          typeof r.id === 'string' &&
            typeof r.queue === 'string' &&
            typeof r.kind === 'string' &&
            Number.isInteger(r.attempt),
          `${event}: ${JSON.stringify(ref)}`,
        );
      }
    const everything = JSON.stringify(seen.map((s) => s.args));
    assert.ok(!everything.includes(MARK), 'no payload reached a listener');
    assert.ok(!everything.includes('"token"'), 'no claim token reached a listener');
  });
});
