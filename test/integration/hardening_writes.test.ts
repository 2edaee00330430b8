/**
 * The write path survives bad rows (issue 15 items 3, 4, 8 and the Low items
 * "Infinite times" and "Bulk commands"; issue 11 §4 completer).
 *
 * A batch write the database refuses is split until the bad row is alone; that
 * row is dead-lettered by itself and the others are written. A non-array
 * `errors` is refused by the schema and tolerated by append_error; absurd
 * retry delays are clamped; cleanup keeps deleting while batches come back
 * full; infinite timestamps do not break `jobs list`, `stats` or the gauges;
 * `jobs retry --failed` works in batches and enqueueMany has a byte cap.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { InputError } from '../../src/errors.ts';
import { retryFailedInBatches } from '../../src/queue/admin/index.ts';
import { claimJobs } from '../../src/queue/claim.ts';
import { DEFAULT_MAX_BATCH_BYTES, enqueueMany } from '../../src/queue/enqueue.ts';
import type { Store } from '../../src/queue/sql.ts';
import { countActiveJobs } from '../../src/queue/stats.ts';
import { clampDelay, MAX_RETRY_DELAY_MS, retryDelay } from '../../src/supervisor/backoff.ts';
import { queueOutcomeStore } from '../../src/supervisor/complete/store.ts';
import { Completer } from '../../src/supervisor/completer.ts';
import { SupervisorEvents, type JobRef } from '../../src/supervisor/events.ts';
import { cleanupBudgetMs, createCleanup, createReaper } from '../../src/supervisor/loops/maintenance.ts';
import { keepsBatch, writeSplitting } from '../../src/supervisor/complete/split_write.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor, testSettings } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let store: Store;
const settings = testSettings({ backoff: { base: '1s', max: '1h', jitter: 0 } });

before(async () => {
  db = await createTestDatabase('hardening_writes');
  store = { db: db.pool, schema: 'jobvisor' };
  // A stand-in for any row the database refuses to change: a user's trigger.
  await db.pool.query(`
    CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.payload ? 'poison_history' AND NEW.errors IS DISTINCT FROM OLD.errors THEN
        RAISE EXCEPTION 'row % refuses a history append', NEW.id;
      END IF;
      IF NEW.payload ? 'poison_all' AND NEW.status IS DISTINCT FROM OLD.status THEN
        RAISE EXCEPTION 'row % refuses every change', NEW.id;
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_poison BEFORE UPDATE ON jobvisor.jobs FOR EACH ROW EXECUTE FUNCTION test_poison();`);
});

after(async () => {
  await db.drop();
});

const count = async (sql: string, values: unknown[] = []) =>
  Number((await db.pool.query(`SELECT count(*) AS n FROM jobvisor.jobs WHERE ${sql}`, values)).rows[0].n);

async function claimed(queue: string, payloads: object[]) {
  await enqueueMany(
    db.pool,
    payloads.map((payload) => ({ kind: 'k', queue, payload })),
  );
  return claimJobs(store, { owner: 'sup-a', queue, limit: payloads.length, leaseMs: 60_000 });
}

/** Waits until the completer holds no unwritten outcome. */
function allWritten(completer: Completer) {
  return until(
    'every outcome written',
    () => Promise.resolve(completer.size),
    (n) => n === 0,
    15_000,
  );
}

function recorder(events: SupervisorEvents) {
  const seen = { retried: [] as JobRef[], dead: [] as JobRef[], completed: [] as JobRef[], fenced: [] as JobRef[] };
  events.on('job:retried', (b) => seen.retried.push(...b.jobs));
  events.on('job:dead', (b) => seen.dead.push(...b.jobs));
  events.on('job:completed', (b) => seen.completed.push(...b.jobs));
  events.on('job:fenced', (b) => seen.fenced.push(...b.jobs));
  events.on('db:error', () => {});
  return seen;
}

describe('splitting a refused batch (pure)', () => {
  it('writes every row but the bad one, which goes to the fallback alone', async () => {
    const written: number[] = [];
    const alone: number[] = [];
    const r = await writeSplitting(26, {
      write: (lo, hi) => {
        if (lo <= 13 && 13 < hi) return Promise.reject(new Error('refused'));
        for (let i = lo; i < hi; i++) written.push(i);
        return Promise.resolve();
      },
      alone: (i) => Promise.resolve(void alone.push(i)),
    });
    assert.deepEqual(alone, [13]);
    assert.deepEqual(
      written.sort((a, b) => a - b),
      [...Array(26).keys()].filter((i) => i !== 13),
    );
    assert.deepEqual(r, { unwritten: [], abandoned: [] });
  });

  it('keeps everything unwritten on a connection error, and reports a fallback that fails', async () => {
    const lost = await writeSplitting(5, {
      write: () => Promise.reject(Object.assign(new Error('reset'), { code: 'ECONNRESET' })),
      alone: () => Promise.reject(new Error('no fallback for a connection error')),
    });
    assert.deepEqual(lost.unwritten, [0, 1, 2, 3, 4]);
    const abandoned = await writeSplitting(2, {
      write: () => Promise.reject(new Error('refused')),
      alone: () => Promise.reject(new Error('still refused')),
    });
    assert.deepEqual(
      abandoned.abandoned.map((a) => a.index),
      [0, 1],
    );
  });

  it('writes at most maxRows rows per statement, and starts none after a retryable error', async () => {
    const statements: Array<[number, number]> = [];
    const r = await writeSplitting(26, {
      maxRows: 10,
      write: (lo, hi) => Promise.resolve(void statements.push([lo, hi])),
      alone: () => Promise.reject(new Error('no row is refused')),
    });
    assert.deepEqual(statements, [
      [0, 10],
      [10, 20],
      [20, 26],
    ]);
    assert.deepEqual(r, { unwritten: [], abandoned: [] });

    statements.length = 0;
    const lost = await writeSplitting(26, {
      maxRows: 10,
      write: (lo, hi) => {
        statements.push([lo, hi]);
        return lo === 10
          ? Promise.reject(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))
          : Promise.resolve();
      },
      alone: () => Promise.reject(new Error('no fallback for a connection error')),
    });
    assert.deepEqual(statements, [
      [0, 10],
      [10, 20],
    ]);
    assert.deepEqual(
      lost.unwritten,
      [...Array(16).keys()].map((i) => i + 10),
    );
  });

  it('keeps the batch for connection, overload and timeout errors, splits for row errors', () => {
    const e = (code: string) => Object.assign(new Error(code), { code });
    for (const code of ['ECONNRESET', '57P01', '40001', '57014', '53100', '42883', '42703', '3F000'])
      assert.equal(keepsBatch(e(code)), true, code);
    for (const code of ['22008', '23514', 'P0001', '22P02']) assert.equal(keepsBatch(e(code)), false, code);
    assert.equal(keepsBatch(new Error('cannot get array length of a non-array')), false);
  });
});

describe('retry delays (pure)', () => {
  it('clamps to a year, and to 0 below zero or for NaN', () => {
    assert.equal(clampDelay(1e16), MAX_RETRY_DELAY_MS);
    assert.equal(clampDelay(Number.POSITIVE_INFINITY), MAX_RETRY_DELAY_MS);
    assert.equal(clampDelay(-5), 0);
    assert.equal(clampDelay(Number.NaN), 0);
    assert.equal(clampDelay(1500.4), 1500);
    assert.equal(retryDelay(60, { base: 1e15, max: 1e18, jitter: 0 }), MAX_RETRY_DELAY_MS);
  });

  it('gives cleanup half its interval', () => {
    assert.equal(cleanupBudgetMs(60_000), 30_000);
  });
});

describe('non-array errors (item 3)', () => {
  it('the schema refuses them and append_error treats them as empty', async () => {
    await assert.rejects(
      db.pool.query(`INSERT INTO jobvisor.jobs (kind, errors) VALUES ('k', '{}')`),
      /jobs_errors_check/,
    );
    const { rows } = await db.pool.query(
      `SELECT jobvisor.append_error('{}'::jsonb, 1, now(), 'x') AS a, jobvisor.append_error('"s"'::jsonb, 2, now(), 'y') AS b`,
    );
    assert.equal(rows[0].a.length, 1);
    assert.equal(rows[0].b[0].error, 'y');
  });

  it('migrating a table that holds bad rows repairs them and adds the constraint', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-mig-'));
    try {
      const all = path.resolve(import.meta.dirname, '../../migrations');
      for (const f of readdirSync(all)) if (/^00[1-4]_/.test(f)) cpSync(path.join(all, f), path.join(dir, f));
      await migrate(db.pool, { schema: 'mig5', dir });
      await db.pool.query(`INSERT INTO mig5.jobs (kind, errors) VALUES ('k', '{}'), ('k', '"text"'), ('k', '[]')`);
      assert.equal((await migrate(db.pool, { schema: 'mig5' }))[0], '005_errors_array');
      const { rows } = await db.pool.query(`SELECT errors FROM mig5.jobs ORDER BY id`);
      assert.ok(rows.every((r) => Array.isArray(r.errors)));
      assert.match(rows[0].errors[0].error, /was not a JSON array.*\{\}/);
      await assert.rejects(db.pool.query(`UPDATE mig5.jobs SET errors = 'null'`), /jobs_errors_check/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the completer', () => {
  const events = new SupervisorEvents();
  let completer: Completer;
  before(() => {
    completer = new Completer(queueOutcomeStore(store, 'sup-a', settings.jobs.maxSnoozes), settings, events);
  });
  afterEach(() => events.removeAllListeners());

  it('writes 25 of 26 failures and dead-letters the poisoned row alone', async () => {
    const seen = recorder(events);
    const jobs = await claimed(
      'q_split',
      Array.from({ length: 26 }, (_, i) => (i === 7 ? { poison_history: true } : { i })),
    );
    assert.equal(jobs.length, 26);
    for (const job of jobs)
      completer.record(job, { type: 'retry', failure: { runMs: 1, error: 'boom', permanent: false, retryInMs: null } });
    await allWritten(completer);
    assert.equal(await count(`queue = 'q_split' AND status = 'pending' AND jsonb_array_length(errors) = 1`), 25);
    const { rows } = await db.pool.query(
      `SELECT status, last_error, errors FROM jobvisor.jobs WHERE queue = 'q_split' AND payload ? 'poison_history'`,
    );
    assert.equal(rows[0].status, 'failed');
    assert.match(rows[0].last_error, /the job failed \(boom\).*refuses a history append.*dead-lettered alone/);
    assert.deepEqual(rows[0].errors, []);
    assert.equal(seen.retried.length, 25);
    assert.equal(seen.dead.length, 1);
  });

  it('clamps a retryInMs of 1e16 instead of failing the write (item 4)', async () => {
    const [job] = await claimed('q_delay', [{}]);
    completer.record(job!, { type: 'retry', failure: { runMs: 1, error: 'later', permanent: false, retryInMs: 1e16 } });
    await allWritten(completer);
    assert.equal(await count(`queue = 'q_delay' AND status = 'pending' AND run_at > now() + interval '364 days'`), 1);
  });

  it('a throwing listener does not make a written outcome be written again', async () => {
    const seen = recorder(events);
    events.on('job:completed', () => {
      throw new Error('listener bug');
    });
    const jobs = await claimed('q_listener', [{}, {}, {}]);
    for (const job of jobs) completer.record(job, { type: 'done', runMs: 1 });
    await allWritten(completer);
    // Give a (wrong) second write the time to happen: it would report the jobs as fenced.
    await completer.flush(Date.now() + 200);
    assert.equal(await count(`queue = 'q_listener' AND status = 'done'`), 3);
    assert.deepEqual(seen.fenced, []);
  });
});

describe('completer.batchSize', () => {
  it('caps the rows of every statement, also for outcomes that gathered during a write', async () => {
    const events = new SupervisorEvents();
    const smallSettings = testSettings({ completer: { batchSize: 10 } });
    const small = new Completer(
      queueOutcomeStore(store, 'sup-a', smallSettings.jobs.maxSnoozes),
      smallSettings,
      events,
    );
    const perStatement: number[] = [];
    events.on('job:completed', (b) => perStatement.push(b.jobs.length));
    const jobs = await claimed(
      'q_batch_size',
      Array.from({ length: 35 }, (_, i) => ({ i })),
    );
    // The tenth outcome starts a write; the other 25 gather while it is in flight.
    for (const job of jobs) small.record(job, { type: 'done', runMs: 1 });
    await allWritten(small);
    assert.equal(await count(`queue = 'q_batch_size' AND status = 'done'`), 35);
    assert.equal(
      perStatement.reduce((a, b) => a + b, 0),
      35,
    );
    assert.ok(
      perStatement.every((n) => n <= 10),
      `rows per statement: ${perStatement.join(', ')}`,
    );
  });
});

describe('a real supervisor', () => {
  it('runs 26 failing jobs, one poisoned, and a retryInMs of 1e16: nothing stalls', async () => {
    const supervisor = startSupervisor(db.url, {
      queues: { default: { concurrency: 10, jobsPerThread: 10 } },
      backoff: { base: '1h', max: '1h', jitter: 0 },
      pool: { maxThreads: 1 },
    });
    await supervisor.start();
    try {
      await enqueueMany(db.pool, [
        ...Array.from({ length: 26 }, (_, i) => ({
          kind: 'fail',
          payload: i === 20 ? { poison_history: true } : { i },
        })),
        { kind: 'retry_later', payload: { ms: '1e16' } },
      ]);
      await until(
        'every job ran once and its outcome was written',
        () =>
          count(`kind IN ('fail', 'retry_later') AND (status = 'running' OR (status = 'pending' AND errors = '[]'))`),
        (n) => n === 0,
        30_000,
      );
      assert.equal(await count(`kind = 'fail' AND status = 'pending' AND jsonb_array_length(errors) = 1`), 25);
      assert.equal(await count(`kind = 'fail' AND status = 'failed' AND last_error ~ 'dead-lettered alone'`), 1);
      assert.equal(
        await count(`kind = 'retry_later' AND status = 'pending' AND run_at > now() + interval '364 days'`),
        1,
      );
    } finally {
      await supervisor.stop();
    }
  });
});

describe('the reaper (item 3)', () => {
  it('keeps reaping other supervisors’ leases around rows it cannot return', async () => {
    const events = new SupervisorEvents();
    events.on('db:error', () => {});
    const reaped: string[] = [];
    events.on('lease:reaped', (e) => reaped.push(...e.jobs.map((j) => j.id)));
    const expired = (payload: string, n: number) =>
      db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, queue, payload, status, attempts, locked_by, locked_until)
         SELECT 'k', 'q_reap', $1::jsonb, 'running', 1, 'crashed', now() - interval '1 minute' FROM generate_series(1, $2)`,
        [payload, n],
      );
    await expired('{}', 10);
    await expired('{"poison_history": true}', 1);
    await expired('{"poison_all": true}', 1);
    await expired('{}', 18);
    const reaper = createReaper(store, { interval: 60_000, batchSize: 1000 }, events);
    await reaper.runOnce();
    assert.equal(await count(`queue = 'q_reap' AND status = 'pending'`), 28);
    assert.equal(
      await count(
        `queue = 'q_reap' AND status = 'failed' AND last_error ~ 'dead-lettered alone' AND payload ? 'poison_history'`,
      ),
      1,
    );
    assert.equal(await count(`queue = 'q_reap' AND status = 'running'`), 1, 'the row that refuses everything stays');
    // Later rounds still reap new expired leases.
    await expired('{}', 5);
    await reaper.runOnce();
    assert.equal(await count(`queue = 'q_reap' AND status = 'pending'`), 33);
    await reaper.stop();
  });
});

describe('cleanup (item 8)', () => {
  it('removes a backlog larger than the old cap of 20 × 1,000 in one round', async (t) => {
    const backlog = 25_000;
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, queue, status, finished_at)
       SELECT 'old', 'q_clean', 'done', now() - interval '10 days' FROM generate_series(1, $1)`,
      [backlog],
    );
    const events = new SupervisorEvents();
    let deleted = 0;
    events.on('jobs:cleaned', (e) => (deleted += e.rows.reduce((n, r) => n + r.count, 0)));
    const cleanup = createCleanup(
      store,
      { interval: 60_000, retention: 3 * 86_400_000, failedRetention: 30 * 86_400_000, batchSize: 1000 },
      events,
    );
    const started = process.hrtime.bigint();
    await cleanup.runOnce();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await cleanup.stop();
    assert.equal(await count(`queue = 'q_clean'`), 0);
    assert.equal(deleted, backlog);
    t.diagnostic(`cleanup deleted ${backlog} rows in ${seconds.toFixed(2)} s: ${Math.round(backlog / seconds)} rows/s`);
  });
});

describe('infinite times (Low)', () => {
  it('jobs list shows run_at = infinity, stats and the gauges survive a pending -infinity', async () => {
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, queue, run_at) VALUES ('inf_kind', 'q_inf', 'infinity'), ('inf_kind', 'q_inf', '-infinity')`,
    );
    let r = await runCliInProcess(db.url, ['jobs', 'list', '--kind', 'inf_kind']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\binfinity\b/);
    assert.match(r.stdout, /-infinity/);
    r = await runCliInProcess(db.url, ['jobs', 'list', '--kind', 'inf_kind', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).run_at)
        .sort(),
      ['-infinity', 'infinity'],
    );
    r = await runCliInProcess(db.url, ['stats']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /oldest pending \(due\): \d+\.\d s/);
    const rows = await countActiveJobs(store);
    const inf = rows.find((x) => x.queue === 'q_inf' && x.status === 'pending');
    assert.equal(inf?.count, 2);
    assert.ok(Number.isFinite(inf?.oldest_due_s));
  });
});

describe('bulk commands (Low)', () => {
  it('jobs retry --failed works in batches and honours --limit', async () => {
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, status, finished_at) SELECT 'dead_bulk', 'failed', now() - interval '1 minute' FROM generate_series(1, 2500)`,
    );
    const batches: number[] = [];
    const n = await retryFailedInBatches(store, {
      kind: 'dead_bulk',
      limit: 1500,
      onBatch: (ids) => batches.push(ids.length),
    });
    assert.equal(n, 1500);
    assert.deepEqual(batches, [1000, 500]);
    let r = await runCliInProcess(db.url, ['jobs', 'retry', '--failed', '--kind', 'dead_bulk', '--limit', '600']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'retried 600 failed job(s)\n');
    r = await runCliInProcess(db.url, ['jobs', 'retry', '--failed', '--kind', 'dead_bulk']);
    assert.equal(r.stdout, 'retried 400 failed job(s)\n');
    assert.equal(await count(`kind = 'dead_bulk' AND status = 'failed'`), 0);
    r = await runCliInProcess(db.url, ['jobs', 'retry', '1', '--limit', '5']);
    assert.equal(r.code, 2);
  });

  it('enqueueMany refuses a batch over its byte cap and writes nothing', async () => {
    assert.equal(DEFAULT_MAX_BATCH_BYTES, 64 * 1024 * 1024);
    const jobs = Array.from({ length: 10 }, () => ({ kind: 'capped', payload: { s: 'x'.repeat(1000) } }));
    await assert.rejects(
      enqueueMany(db.pool, jobs, { maxBatchBytes: 5000 }),
      (err) => err instanceof InputError && /over the enqueueMany limit of 5000 bytes/.test(err.message),
    );
    assert.equal(await count(`kind = 'capped'`), 0);
    assert.equal((await enqueueMany(db.pool, jobs.slice(0, 2), { maxBatchBytes: 5000 })).length, 2);
  });
});
