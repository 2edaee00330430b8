/**
 * Re-queues of running jobs and poisoned rows written by plain SQL.
 *
 * A job cancelled and retried while it runs is claimed again, possibly by the
 * same supervisor. Fenced by (id, attempt), the two runs shared a fence: the
 * old run's outcome was taken for the new one. Every claim now carries its own
 * token, and the newer run starts only once the older one has ended.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancelJobs, retryJobs } from '../../src/queue/admin/index.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';
import { GATE_TABLES, gateRunsOf, tellGate } from '../helpers/gate.ts';

const file = supervisedFile(
  'hardening_fence',
  {
    queues: { default: { concurrency: 10, jobsPerThread: 10 } },
    jobs: { timeout: '30s', lease: '3s', maxPayloadBytes: 65_536 },
    backoff: { base: '10s', max: '10s', jitter: 0 },
    pool: { maxThreads: 1 },
  },
  {
    prepare: async (db) => {
      await db.pool.query(`${GATE_TABLES}
      CREATE TABLE executions (job_id bigint, attempt int, pid int, finished boolean DEFAULT false, at timestamptz DEFAULT clock_timestamp());`);
    },
  },
);

// Never SELECT * here: one row's payload is 600 MB of JSON text.
const job = async (id: string) =>
  (await file.db.pool.query('SELECT id, status, attempts, last_error, errors FROM jobvisor.jobs WHERE id = $1', [id]))
    .rows[0];
const runsOf = (id: string) => gateRunsOf(file.db.pool, id);
const tell = (run: number, action: 'done' | 'fail') => tellGate(file.db.pool, run, action);

/** Both runs of a re-queued job, once the second has started; they never overlap. */
async function twoRuns(id: string) {
  const [old, second] = await until(
    'second run started',
    () => runsOf(id),
    (r) => r.length === 2,
    15_000,
  );
  assert.ok(second.started >= old.ended, 'the two runs never overlapped');
  return [old, second];
}

/** The job's row once it has reached `status`. */
const settledAs = (id: string, status: string) =>
  until(
    `job ${id} ${status}`,
    () => job(id),
    (r) => r.status === status,
    15_000,
  );

async function requeueWhileRunning(honourSignal: boolean, how: 'cancel-retry' | 'sql' = 'cancel-retry') {
  const { id } = await enqueue(file.db.pool, 'gate', { honourSignal });
  const [first] = await until(
    'first run started',
    () => runsOf(id),
    (r) => r.length === 1,
    15_000,
  );
  if (how === 'cancel-retry') {
    // `jobs cancel ID && jobs retry ID`: the row is pending again with attempts = 0.
    assert.deepEqual((await cancelJobs(file.store, { ids: [id] })).ids, [id]);
    assert.deepEqual((await retryJobs(file.store, { ids: [id] })).ids, [id]);
  } else {
    // The plain-SQL re-queue recipe of docs/guides/enqueueing.md, applied to a running job.
    await file.db.pool.query("UPDATE jobvisor.jobs SET status = 'pending', attempts = 0 WHERE id = $1", [id]);
  }
  return { id: id, first };
}

describe('a running job cancelled and retried', () => {
  it('runs again only after the old run ended, and the new run owns the outcome', async () => {
    const { id, first } = await requeueWhileRunning(true);
    const [old, second] = await twoRuns(id);
    assert.equal(old.how, 'aborted', 'the old run was stopped');
    assert.equal(second.attempt, 1);
    assert.equal(first.run, old.run);
    // The old run's abort was not charged to the new run: the job is still running.
    assert.equal((await job(id)).status, 'running');
    await tell(second.run, 'fail');
    const row = await settledAs(id, 'pending');
    assert.equal(row.attempts, 1);
    assert.match(row.last_error, new RegExp(`run ${second.run} failed as told`));
    assert.equal(row.errors.length, 1, 'one failure in the history: the new run');
  });

  it('an old run that ignores its signal and then succeeds cannot mark the new run done', async () => {
    const { id, first } = await requeueWhileRunning(false);
    // The old run finishes "successfully" after the job was re-queued.
    await tell(first.run, 'done');
    const [old, second] = await twoRuns(id);
    assert.equal(old.how, 'done');
    assert.equal((await job(id)).status, 'running', 'the stale success was fenced off');
    await tell(second.run, 'fail');
    const row = await settledAs(id, 'pending');
    assert.match(row.last_error, new RegExp(`run ${second.run} failed as told`));
  });
});

describe('a running job re-queued by plain SQL', () => {
  it('the old run is stopped and fenced off; the new run owns the outcome', async () => {
    const { id } = await requeueWhileRunning(true, 'sql');
    const [old, second] = await twoRuns(id);
    assert.equal(old.how, 'aborted');
    assert.equal((await job(id)).status, 'running');
    await tell(second.run, 'done');
    const row = await settledAs(id, 'done');
    assert.equal(row.attempts, 1);
    assert.equal(row.errors.length, 0, "the old run's abort was charged to nobody");
  });
});

describe('rows that other producers write', () => {
  it('dead-letters an oversized plain-SQL payload alone; its co-claimed neighbours run', async () => {
    // 100 M characters that JSON escapes as \u0001: 600 MB of JSON text, about
    // 1 MB stored. Sent to the client it would overflow V8's string limit.
    const { rows } = await file.db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload, run_at) VALUES ('record', jsonb_build_object('s', repeat(chr(1), 100000000)), now() + interval '1 hour') RETURNING id`,
    );
    const big = rows[0].id as string;
    // Over the limit too, but stored small enough that the claim measures its JSON text.
    const { rows: middling } = await file.db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload, run_at) VALUES ('record', jsonb_build_object('s', repeat('x', 100000)), now() + interval '1 hour') RETURNING id`,
    );
    const neighbours = await enqueueMany(
      file.db.pool,
      Array.from({ length: 9 }, () => ({ kind: 'record', payload: {}, runAt: new Date(Date.now() + 3_600_000) })),
    );
    // All eleven come due in one statement, so one claim takes them together.
    await file.db.pool.query("UPDATE jobvisor.jobs SET run_at = now() WHERE kind = 'record' AND status = 'pending'");
    await file.db.pool.query("NOTIFY jobvisor_jobs, 'default'");
    const dead = await until(
      'oversized job dead-lettered',
      () => job(big),
      (r) => r.status === 'failed',
      60_000,
    );
    assert.match(
      dead.last_error,
      /^PayloadTooLarge: the payload is stored in \d{7} bytes, so its JSON is far over jobs.maxPayloadBytes \(65536\)/,
    );
    assert.equal(dead.attempts, 1);
    const measured = await until(
      'the middling job dead-lettered',
      () => job(middling[0].id as string),
      (r) => r.status === 'failed',
      60_000,
    );
    assert.match(
      measured.last_error,
      /^PayloadTooLarge: the payload is 100009 bytes of JSON, over jobs.maxPayloadBytes \(65536\)/,
    );
    const ids = neighbours.map((n) => n.id);
    await until(
      'neighbours done',
      async () =>
        (
          await file.db.pool.query(
            "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status = 'done'",
            [ids],
          )
        ).rows[0].n,
      (n) => n === 9,
      30_000,
    );
    const attempts = await file.db.pool.query('SELECT DISTINCT attempts FROM jobvisor.jobs WHERE id = ANY($1)', [ids]);
    assert.deepEqual(attempts.rows, [{ attempts: 1 }], 'no neighbour was charged an extra attempt');
  });

  it('a row with attempts = 2147483647 does not stall its queue', async () => {
    const { rows } = await file.db.pool.query(
      "INSERT INTO jobvisor.jobs (kind, payload, attempts) VALUES ('record', '{}', 2147483647) RETURNING id",
    );
    const { id: after } = await enqueue(file.db.pool, 'record', {});
    await until(
      'a later job ran',
      () => job(after),
      (r) => r.status === 'done',
      15_000,
    );
    // Claimed with the later job, it may finish a moment after it: wait for its own outcome.
    const row = await until(
      'the row at the attempts ceiling settled',
      () => job(rows[0].id),
      (r) => r.status !== 'running' && r.status !== 'pending',
      15_000,
    );
    assert.equal(row.status, 'done');
    assert.equal(row.attempts, 2147483647);
  });
});
