/**
 * Every hot statement keeps its intended index plan whatever the statistics
 * say. The table is tiny when the statements first run (so a cached generic
 * plan, if any, is made for a tiny table), then grows to about a million rows
 * with no ANALYZE (autovacuum is off for it). Each statement then runs through
 * its real function on the same connection, and auto_explain hands the plan it
 * actually executed back to the client as a notice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { createPool } from '../../src/db/pool.ts';
import { claimJobs, nextDueIn } from '../../src/queue/claim.ts';
import { claimLimited } from '../../src/queue/claim_limited.ts';
import { deleteOldJobs } from '../../src/queue/cleanup.ts';
import { completeJobs, failJobs, releaseJobs } from '../../src/queue/complete.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { rollUpFinished } from '../../src/queue/finished_rollup.ts';
import { renewLeases } from '../../src/queue/lease.ts';
import { writeProgress } from '../../src/queue/progress.ts';
import { reapExpiredLeases } from '../../src/queue/reaper.ts';
import { signal } from '../../src/queue/signal.ts';
import { sleepJobs } from '../../src/queue/sleep.ts';
import { snoozeJobs } from '../../src/queue/snooze.ts';
import { loadSteps, recordStep } from '../../src/queue/steps.ts';
import { takeWait } from '../../src/queue/take_wait.ts';
import { parkWaits, wakeTimedOutWaits } from '../../src/queue/wait.ts';
import type { Store } from '../../src/queue/sql.ts';
import { countActiveJobs, oldestDueByQueue } from '../../src/queue/stats.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const GROWN = 1_000_000;
/** Of which pending (the burst); the rest is a history of done jobs. */
const BURST = 50_000;
let db: TestDatabase;
let pool: pg.Pool;
let store: Store;
const plans: string[] = [];

/** The plans auto_explain reported for whatever `fn` ran. */
async function planOf(fn: () => Promise<unknown>): Promise<string> {
  plans.length = 0;
  await fn();
  const text = plans.join('\n');
  assert.ok(text.length > 0, 'auto_explain reported no plan');
  return text;
}

/** One round of every hot statement, so each has run (and been cached) at the table's current size. */
async function everyStatement(): Promise<void> {
  const claimed = await claimJobs(store, { owner: 'p', queue: 'default', limit: 4, leaseMs: 60_000 });
  const [a, b, c, d] = claimed;
  if (a) await completeJobs(store, 'p', [a.id], [a.token]);
  if (b)
    await failJobs(store, 'p', { ids: [b.id], tokens: [b.token], permanent: [true], delaysMs: [0], errors: ['x'] });
  if (c) await releaseJobs(store, 'p', [{ id: c.id, token: c.token }]);
  if (d) await renewLeases(store, 'p', [{ id: d.id, token: d.token }], 60_000);
  await reapExpiredLeases(store, 100);
  // A child of existing jobs: its COMMIT runs jobvisor.settle_new_edges (migration 023), whose
  // statements PL/pgSQL plans once and may keep as generic plans made on the tiny table.
  const parents = await pool.query<{ id: string }>('SELECT id FROM jobvisor.jobs ORDER BY id LIMIT 3');
  await enqueue(pool, 'noop', {}, { dependsOn: parents.rows.map((r) => r.id) });
  await deleteOldJobs(store, { retentionMs: 3_600_000, failedRetentionMs: 3_600_000, limit: 100 });
  await rollUpFinished(store);
  await nextDueIn(store, 'default');
  await countActiveJobs(store);
  await oldestDueByQueue(store);
  // Limited claims: their choice is made in PL/pgSQL, whose plans are kept per connection.
  for (const limits of LIMITED) {
    const got = await claimLimited(store, { ...limitedArgs, limits, keylessScan: 'window' });
    if (got.jobs.length > 0)
      await completeJobs(
        store,
        'p',
        got.jobs.map((j) => j.id),
        got.jobs.map((j) => j.token),
      );
  }
  await stepStatements();
}

let round = 0;

/**
 * The durable steps' statements, so that the ones inside PL/pgSQL functions
 * (jobvisor.signal, park_waits) are planned, and maybe cached as generic
 * plans, while job_steps and job_signals are tiny.
 */
async function stepStatements(): Promise<void> {
  round++;
  const [a, b] = await claimJobs(store, { owner: 'w', queue: 'default', limit: 2, leaseMs: 60_000 });
  if (!a || !b) return;
  await loadSteps(pool, 'jobvisor', a.id, a.token);
  await recordStep(pool, 'jobvisor', { id: a.id, token: a.token, name: `s${round}`, result: '1', ms: 1 });
  await takeWait(pool, 'jobvisor', { id: a.id, token: a.token, name: 'w' });
  await signal(pool, b.id, 'early', { n: round });
  await parkWaits(store, 'w', {
    ids: [a.id, b.id],
    tokens: [a.token, b.token],
    names: ['w', 'early'],
    untilMs: [null, null],
    timeoutsMs: [0, 0],
  });
  await signal(pool, a.id, 'w', null, { ignoreFinished: true });
  await wakeTimedOutWaits(store, 100);
}

/** One limited claim of each kind: queue-wide, per key, rate-limited per key and queue-wide. */
const LIMITED = [
  { perKeyConcurrency: 2 },
  { globalConcurrency: 1_000_000 },
  { perKeyConcurrency: 1, globalConcurrency: 1_000_000 },
  { rateLimit: { count: 1_000_000, periodMs: 1000, perKey: false } },
  { rateLimit: { count: 1_000_000, periodMs: 1000, perKey: true } },
];
const limitedArgs = { owner: 'p', queue: 'default', limit: 20, leaseMs: 60_000, maxPayloadBytes: 1 << 20 };

before(async () => {
  db = await createTestDatabase('plans');
  for (const table of ['jobs', 'job_steps', 'job_signals'])
    await db.pool.query(`ALTER TABLE jobvisor.${table} SET (autovacuum_enabled = off)`);
  // One connection, so every statement's cached plan lives where auto_explain watches.
  pool = createPool(db.url, { max: 1 });
  pool.on('connect', (client) => client.on('notice', (n) => plans.push(n.message ?? '')));
  store = { db: pool, schema: 'jobvisor' };
  await pool.query(`LOAD 'auto_explain'`);
  await pool.query(`SET auto_explain.log_min_duration = -1`);
  await pool.query(`SET auto_explain.log_level = notice`);
  await pool.query(`SET auto_explain.log_nested_statements = on`);

  // Tiny: a few finished and waiting jobs, analyzed as autovacuum would after a quiet spell.
  await enqueueMany(
    pool,
    Array.from({ length: 40 }, (_, i) => ({ kind: 'noop', payload: { i } })),
  );
  for (let i = 0; i < 8; i++) await everyStatement();
  await pool.query('ANALYZE jobvisor.jobs, jobvisor.job_steps, jobvisor.job_signals');
  for (let i = 0; i < 8; i++) await everyStatement();

  // Grown: a burst of pending jobs plus a history of done ones and some running, no ANALYZE.
  await pool.query(`INSERT INTO jobvisor.jobs (kind, payload, status, finished_at)
                    SELECT 'noop', '{}', 'done', now() - interval '2 hours' FROM generate_series(1, ${GROWN - BURST})`);
  await pool.query(`INSERT INTO jobvisor.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, ${BURST})`);
  // Beside it, records and signals of 100,000 jobs (five records each), and 20,000 waiting jobs.
  await pool.query(`INSERT INTO jobvisor.job_steps (job_id, name, kind, result, finished_at)
                    SELECT i, k::text, 'step', '{"ok": true}', now()
                      FROM generate_series(1, 100000) AS i, generate_series(1, 5) AS k ON CONFLICT DO NOTHING`);
  await pool.query(`INSERT INTO jobvisor.job_signals (job_id, name) SELECT i, 'x' FROM generate_series(1, 100000) AS i
                    ON CONFLICT DO NOTHING`);
  await pool.query(`INSERT INTO jobvisor.jobs (kind, payload, status, waiting_for, run_at, has_steps)
                    SELECT 'noop', '{}', 'waiting', 'w', now() + interval '1 hour', true FROM generate_series(1, 20000)`);
  await pool.query(`SET auto_explain.log_min_duration = 0`);
});

after(async () => {
  await pool?.end();
  await db?.drop();
});

describe('hot statements on a table that grew from tiny to a million rows without ANALYZE', () => {
  it('claims through jobs_pending_idx', async () => {
    const plan = await planOf(() => claimJobs(store, { owner: 'p', queue: 'default', limit: 50, leaseMs: 60_000 }));
    assert.match(plan, /Index Scan using jobs_pending_idx/, plan);
    assert.doesNotMatch(plan, /Seq Scan/, plan);
  });

  it('completes, fails, releases, renews, snoozes and reports progress through an index on id', async () => {
    const jobs = await claimJobs(store, { owner: 'q', queue: 'default', limit: 700, leaseMs: 60_000 });
    const part = (k: number) => jobs.slice(k * 100, k * 100 + 100);
    const checks: Array<[string, () => Promise<unknown>]> = [
      [
        'complete',
        () =>
          completeJobs(
            store,
            'q',
            part(0).map((j) => j.id),
            part(0).map((j) => j.token),
          ),
      ],
      [
        'fail',
        () =>
          failJobs(store, 'q', {
            ids: part(1).map((j) => j.id),
            tokens: part(1).map((j) => j.token),
            permanent: part(1).map(() => false),
            delaysMs: part(1).map(() => 1000),
            errors: part(1).map(() => 'x'),
          }),
      ],
      [
        'release',
        () =>
          releaseJobs(
            store,
            'q',
            part(2).map((j) => ({ id: j.id, token: j.token })),
          ),
      ],
      [
        'renew',
        () =>
          renewLeases(
            store,
            'q',
            part(3).map((j) => ({ id: j.id, token: j.token })),
            60_000,
          ),
      ],
      [
        'complete with results',
        () =>
          completeJobs(
            store,
            'q',
            part(4).map((j) => j.id),
            part(4).map((j) => j.token),
            null,
            { results: part(4).map(() => '{"ok":true}'), progress: part(4).map(() => null) },
          ),
      ],
      [
        'snooze',
        () =>
          snoozeJobs(
            store,
            'q',
            { ids: part(5).map((j) => j.id), tokens: part(5).map((j) => j.token), delaysMs: part(5).map(() => 1000) },
            100,
          ),
      ],
      [
        'progress',
        () =>
          writeProgress(
            store,
            'q',
            part(6).map((j) => j.id),
            part(6).map((j) => j.token),
            part(6).map(() => '{"step":1}'),
          ),
      ],
    ];
    for (const [name, fn] of checks) {
      const plan = await planOf(fn);
      assert.match(
        plan,
        /Index Scan using jobs_(pkey|running_idx)|Bitmap Index Scan on jobs_(pkey|running_idx)/,
        `${name}: ${plan}`,
      );
      assert.doesNotMatch(plan, /Seq Scan/, `${name}: ${plan}`);
    }
  });

  it('records steps, sleeps, parks waits and sends signals through the primary keys', async () => {
    const jobs = await claimJobs(store, { owner: 's', queue: 'default', limit: 201, leaseMs: 60_000 });
    const sleepers = jobs.slice(0, 100);
    const waiters = jobs.slice(100, 200);
    const one = jobs[200];
    assert.ok(one);
    const checks: Array<[string, () => Promise<unknown>]> = [
      ['load steps', () => loadSteps(pool, 'jobvisor', one.id, one.token)],
      [
        'record a step',
        () => recordStep(pool, 'jobvisor', { id: one.id, token: one.token, name: 'a', result: '1', ms: 1 }),
      ],
      ['take a wait', () => takeWait(pool, 'jobvisor', { id: one.id, token: one.token, name: 'w' })],
      [
        'sleep',
        () =>
          sleepJobs(store, 's', {
            ids: sleepers.map((j) => j.id),
            tokens: sleepers.map((j) => j.token),
            names: sleepers.map(() => 'nap'),
            untilMs: sleepers.map(() => null),
            delaysMs: sleepers.map(() => 60_000),
          }),
      ],
      [
        'park waits',
        () =>
          parkWaits(store, 's', {
            ids: waiters.map((j) => j.id),
            tokens: waiters.map((j) => j.token),
            names: waiters.map(() => 'w'),
            untilMs: waiters.map(() => null),
            timeoutsMs: waiters.map(() => 60_000),
          }),
      ],
      ['signal', () => signal(pool, waiters[0]?.id as string, 'w', { ok: true })],
      ['signal kept', () => signal(pool, waiters[1]?.id as string, 'other', { ok: true })],
    ];
    for (const [name, fn] of checks) {
      const plan = await planOf(fn);
      assert.match(plan, /jobs_(pkey|running_idx)/, `${name}: ${plan}`);
      assert.doesNotMatch(plan, /Seq Scan on (jobs|job_steps|job_signals)\b/, `${name}: ${plan}`);
    }
    // Every statement that reads or writes the records reaches them by their primary keys.
    const steps = await planOf(() => loadSteps(pool, 'jobvisor', one.id, one.token));
    assert.match(steps, /job_steps_pkey/, steps);
    const signalled = await planOf(() => signal(pool, waiters[2]?.id as string, 'w', null));
    assert.match(signalled, /job_signals_pkey/, signalled);
  });

  it('wakes timed-out waits through jobs_waiting_idx, and cleanup drops records through their keys', async () => {
    await pool.query(`UPDATE jobvisor.jobs SET run_at = now() - interval '1 minute'
                       WHERE id IN (SELECT id FROM jobvisor.jobs WHERE status = 'waiting' LIMIT 50)`);
    const wake = await planOf(() => wakeTimedOutWaits(store, 1000));
    assert.match(wake, /jobs_waiting_idx/, wake);
    assert.doesNotMatch(wake, /Seq Scan/, wake);
    await pool.query(`UPDATE jobvisor.jobs SET has_steps = true
                       WHERE id IN (SELECT id FROM jobvisor.jobs WHERE status = 'done' ORDER BY id LIMIT 200)`);
    const clean = await planOf(() =>
      deleteOldJobs(store, { retentionMs: 3_600_000, failedRetentionMs: 3_600_000, limit: 1000 }),
    );
    assert.match(clean, /job_steps_pkey/, clean);
    assert.match(clean, /job_signals_pkey/, clean);
    assert.doesNotMatch(clean, /Seq Scan/, clean);
  });

  it('reaps through jobs_running_idx, and rolls up and cleans up through jobs_finished_idx', async () => {
    const reap = await planOf(() => reapExpiredLeases(store, 1000));
    assert.match(reap, /jobs_running_idx/, reap);
    assert.doesNotMatch(reap, /Seq Scan/, reap);
    const clean = await planOf(() =>
      deleteOldJobs(store, { retentionMs: 3_600_000, failedRetentionMs: 3_600_000, limit: 1000 }),
    );
    assert.match(clean, /jobs_finished_idx/, clean);
    assert.doesNotMatch(clean, /Seq Scan/, clean);
    // The rollup that runs before each cleanup round: one range of jobs_finished_idx (its watermark row is read whole).
    const rolled = await planOf(() => rollUpFinished(store));
    assert.match(rolled, /jobs_finished_idx/, rolled);
    assert.doesNotMatch(rolled, /Seq Scan on jobs\b/, rolled);
  });

  it('limited claims update the rows they chose through the primary key, and choose them through the indexes', async () => {
    // Some of the burst with keys, some running, so the walks, counts and windows have rows to read.
    await pool.query(`UPDATE jobvisor.jobs SET concurrency_key = 'k' || (id % 500)
                       WHERE id IN (SELECT id FROM jobvisor.jobs WHERE status = 'pending' ORDER BY id LIMIT 20000)`);
    for (const limits of LIMITED) {
      const plan = await planOf(() => claimLimited(store, { ...limitedArgs, limits, keylessScan: 'window' }));
      assert.match(plan, /(Index Scan using|Bitmap Index Scan on) jobs_pkey[^\n]*\n[^\n]*Index Cond: \(id = ANY/, plan);
      assert.doesNotMatch(plan, /jobs_pending_idx[^\n]*\n[^\n]*Index Cond: \(id = ANY/, plan);
      assert.doesNotMatch(plan, /Seq Scan/, plan);
      // The choice: keys walked through jobs_pending_key_idx, held slots read once from the running rows.
      if ('perKeyConcurrency' in limits) assert.match(plan, /Index Only Scan using jobs_pending_key_idx/, plan);
      // Held slots of the visited keys through jobs_running_key_idx, not every running row (migration 034).
      if ('perKeyConcurrency' in limits)
        assert.match(plan, /jobs_running_key_idx on jobs[^\n]*\n[^\n]*Index Cond: [^\n]*concurrency_key = ANY/, plan);
      // The walk resumes at its cursor through the index, not by filtering the index from its start.
      assert.doesNotMatch(plan, /Filter: [^\n]*OR \(concurrency_key > /, plan);
      // A volatile function called per row (due_job_ids as a filter, say) runs once per row it filters.
      const locks = plan.match(/LockRows/g)?.length ?? 0;
      assert.ok(locks <= 3, `${locks} row-locking statements for one claim (due_job_ids per row?):\n${plan}`);
    }
  });

  it("settles an enqueue's existing parents at its COMMIT through the primary key", async () => {
    const { rows } = await pool.query<{ id: string }>(
      `(SELECT id FROM jobvisor.jobs WHERE status = 'done' ORDER BY id DESC LIMIT 2)
       UNION ALL (SELECT id FROM jobvisor.jobs WHERE status = 'pending' ORDER BY id DESC LIMIT 2)`,
    );
    const plan = await planOf(() => enqueue(pool, 'noop', {}, { dependsOn: rows.map((r) => r.id) }));
    assert.match(plan, /FOR NO KEY UPDATE/, plan); // the COMMIT's trigger (jobvisor.settle_new_edges) was seen
    assert.match(plan, /jobs_pkey/, plan);
    assert.doesNotMatch(plan, /Seq Scan on jobs\b/, plan);
  });

  it('finds the next due time through jobs_pending_idx', async () => {
    const due = await planOf(() => nextDueIn(store, 'default'));
    assert.match(due, /jobs_pending_idx/, due);
    assert.doesNotMatch(due, /Seq Scan/, due);
  });

  // One branch per status, each through its own partial index (src/queue/stats.ts).
  it('counts the gauges through the partial indexes', async () => {
    const gauges = await planOf(() => countActiveJobs(store));
    assert.match(gauges, /jobs_pending_idx/, gauges);
    assert.doesNotMatch(gauges, /Seq Scan/, gauges);
  });

  it('reads the oldest due age through jobs_pending_idx', async () => {
    const age = await planOf(() => oldestDueByQueue(store));
    assert.match(age, /jobs_pending_idx/, age);
    assert.doesNotMatch(age, /Seq Scan/, age);
  });
});
