/**
 * Real worker threads: what a task does wrong inside its thread fails that job
 * only. A forgotten await (an unhandled rejection), an error thrown from a
 * timer and odd thrown values used to end the thread and charge every job on
 * it an attempt; a task that keeps every ctx.db connection made its neighbours
 * wait until their own timeouts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancelJobs } from '../../src/queue/admin/index.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'task_escapes',
  {
    // One thread, shared by every job: a thread death would hit all of them.
    queues: { default: { concurrency: 24, jobsPerThread: 24 } },
    jobs: { timeout: '60s', lease: '30s' },
    backoff: { base: '50ms', max: '200ms', jitter: 0 },
    pool: { maxThreads: 1, dbPoolSize: 2 },
    poll: { interval: '200ms' },
  },
  {
    prepare: async (db) => {
      await db.pool.query('CREATE TABLE naps (job_id bigint NOT NULL, attempt int NOT NULL)');
      await db.pool.query('CREATE TABLE chaos_echo (job_id bigint NOT NULL, payload jsonb)');
    },
  },
);

type Row = { id: string; kind: string; status: string; attempts: number; last_error: string | null };

async function rows(ids: string[]): Promise<Row[]> {
  return (
    await file.db.pool.query<Row>(
      'SELECT id::text, kind, status, attempts, last_error FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
      [ids],
    )
  ).rows;
}

/** Twenty naps running together on the one thread, then `culprits` join them. */
async function amongNeighbours(culprits: Array<{ kind: string; payload?: unknown }>, napMs = 2500) {
  const neighbours = (
    await enqueueMany(
      file.db.pool,
      Array.from({ length: 20 }, () => ({ kind: 'nap', payload: { ms: napMs }, maxAttempts: 3 })),
    )
  ).map((r) => r.id);
  await until(
    'neighbours running',
    () => rows(neighbours),
    (rs) => rs.every((r) => r.status === 'running'),
    30_000,
  );
  const bad = (
    await enqueueMany(
      file.db.pool,
      culprits.map((c) => ({ ...c, maxAttempts: 1 })),
    )
  ).map((r) => r.id);
  const all = [...neighbours, ...bad];
  const settled = await until(
    'all settled',
    () => rows(all),
    (rs) => rs.every((r) => r.status === 'done' || r.status === 'failed'),
    60_000,
  );
  return {
    neighbours: settled.filter((r) => neighbours.includes(r.id)),
    bad: settled.filter((r) => bad.includes(r.id)),
  };
}

describe('errors escaping a task', () => {
  it('a forgotten await fails its own job; twenty neighbours on its thread finish with one attempt each', async () => {
    const { neighbours, bad } = await amongNeighbours([{ kind: 'forgot_await', payload: { ms: 100 } }]);
    assert.deepEqual(
      neighbours.map((r) => [r.status, r.attempts]),
      neighbours.map(() => ['done', 1]),
      JSON.stringify(neighbours),
    );
    assert.equal(bad[0]?.status, 'failed');
    assert.match(bad[0]?.last_error ?? '', /^UnhandledRejection: a promise rejected with no handler.*forgotten/);
  });

  it('an error thrown from a timer fails its own job; the neighbours are not charged', async () => {
    const { neighbours, bad } = await amongNeighbours([{ kind: 'chaos_timer_throw' }]);
    assert.ok(
      neighbours.every((r) => r.status === 'done' && r.attempts === 1),
      JSON.stringify(neighbours),
    );
    assert.match(bad[0]?.last_error ?? '', /^UncaughtException: .*chaos: thrown from a timer/);
  });

  it('odd thrown values fail their jobs with a readable error; the thread survives', async () => {
    const values = [
      'symbol-message',
      'numeric-stack',
      'throwing-getter',
      'proxy',
      'null',
      'undefined',
      'tostring-throws',
    ];
    const { neighbours, bad } = await amongNeighbours(
      values.map((value) => ({ kind: 'odd_throw', payload: { value } })),
    );
    assert.ok(
      neighbours.every((r) => r.status === 'done' && r.attempts === 1),
      JSON.stringify(neighbours),
    );
    assert.equal(bad.length, values.length);
    for (const r of bad) {
      assert.equal(r.status, 'failed');
      assert.doesNotMatch(r.last_error ?? '', /Worker(Crashed|Exited)/, JSON.stringify(r));
    }
  });
});

describe('payloads from plain SQL', () => {
  it('an integer beyond 2^53 dead-letters its job naming the path; it never reaches the task rounded', async () => {
    const { rows: inserted } = await file.db.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, payload) VALUES
         ('chaos_echo', '{"id": 9007199254740993}'),
         ('chaos_echo', '{"id": 9007199254740991, "big": "9007199254740993"}')
       RETURNING id::text`,
    );
    const ids = inserted.map((r) => r.id);
    const settled = await until(
      'plain-SQL jobs settled',
      () => rows(ids),
      (rs) => rs.every((r) => r.status === 'done' || r.status === 'failed'),
      30_000,
    );
    assert.equal(settled[0]?.status, 'failed');
    assert.equal(settled[0]?.attempts, 1, 'permanent: no retry');
    assert.match(settled[0]?.last_error ?? '', /^PayloadError: payload\.id is an integer beyond 2\^53 - 1/);
    assert.equal(settled[1]?.status, 'done');
    const echoed = await file.db.pool.query<{ job_id: string; payload: unknown }>(
      'SELECT job_id::text, payload FROM chaos_echo WHERE job_id = ANY($1)',
      [ids],
    );
    assert.deepEqual(echoed.rows, [{ job_id: ids[1], payload: { id: 9007199254740991, big: '9007199254740993' } }]);
  });
});

describe('ctx.db', () => {
  it('a task that keeps every connection: a neighbour on its thread gets a clear error, not a hang', async () => {
    const [hog] = (
      await enqueueMany(file.db.pool, [{ kind: 'db_hog', payload: { clients: 2, ms: 45_000 }, maxAttempts: 1 }])
    ).map((r) => r.id);
    await until(
      'hog running',
      () => rows([hog as string]),
      (rs) => rs[0]?.status === 'running',
      30_000,
    );
    // Running is the claim; the hog holds both clients only once the pool opened both (it opens
    // them on demand). A neighbour sent before that could get one. The hog renames the sessions
    // it holds: counting 'jobvisor-task' sessions also counted those of the thread an earlier
    // test crashed, still closing, and CI once sent the neighbour too early that way.
    await until(
      'hog holding both ctx.db connections',
      async () =>
        (
          await file.db.pool.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'jobvisor-task-hog'",
          )
        ).rows[0]?.n,
      (n) => n === 2,
      30_000,
    );
    const [victim] = (await enqueueMany(file.db.pool, [{ kind: 'db_query', maxAttempts: 1 }])).map((r) => r.id);
    const [row] = await until(
      'victim settled',
      () => rows([victim as string]),
      (rs) => rs[0]?.status === 'failed' || rs[0]?.status === 'done',
      40_000,
    );
    const [hogRow] = await rows([hog as string]);
    assert.equal(row?.status, 'failed', 'the neighbour did not wait for the leak to end');
    assert.match(row?.last_error ?? '', /ctx\.db: no database connection within 10000 ms: all 2 connections/);
    assert.equal(hogRow?.status, 'running', 'it failed while the leak went on');
    // Cancelled (its task ends on ctx.signal), so stopping the file.supervisor does not wait out the
    // shutdown grace (25 s) for a 45 s leak.
    assert.deepEqual((await cancelJobs({ db: file.db.pool, schema: 'jobvisor' }, { ids: [hog as string] })).ids, [hog]);
    await until(
      'hog ended by its cancel',
      () => file.supervisor.inFlight(),
      (n) => n === 0,
      30_000,
    );
  });
});
