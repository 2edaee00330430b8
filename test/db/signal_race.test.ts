/**
 * The races of waits and signals, on a real PostgreSQL with real concurrent
 * transactions (migration 028 says how each is closed):
 *   - a signal committed while a run is being parked is never lost, whichever
 *     of the two takes the job's row lock first;
 *   - a signal racing the timeout resumes the job exactly once, and the run
 *     that follows receives one of the two, recorded for good.
 * Each test holds one side's transaction open, checks that the other side
 * really waits for its lock (pg_stat_activity), then commits.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { claimJobs } from '../../src/queue/claim.ts';
import { signal } from '../../src/queue/signal.ts';
import type { Store } from '../../src/queue/sql.ts';
import { takeWait } from '../../src/queue/take_wait.ts';
import { parkWaits, wakeTimedOutWaits } from '../../src/queue/wait.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let store: Store;
let queue = 0;

before(async () => {
  db = await createTestDatabase('signal_race');
  store = { db: db.pool, schema: 'jobvisor' };
});

after(async () => {
  await db.drop();
});

/** A job of its own queue, claimed by owner 'o'. */
async function claimed(): Promise<{ id: string; token: string; queue: string }> {
  const q = `q${++queue}`;
  await db.pool.query(`INSERT INTO jobvisor.jobs (kind, queue) VALUES ('k', $1)`, [q]);
  const [job] = await claimJobs(store, { owner: 'o', queue: q, limit: 1, leaseMs: 60_000 });
  assert.ok(job);
  return { id: job.id, token: job.token, queue: q };
}

const park = (j: { id: string; token: string }, s: Store = store) =>
  parkWaits(s, 'o', { ids: [j.id], tokens: [j.token], names: ['w'], untilMs: [null], timeoutsMs: [3_600_000] });

const status = async (id: string) =>
  (await db.pool.query('SELECT status, waiting_for FROM jobvisor.jobs WHERE id = $1', [id])).rows[0];

/** Resolves once some backend of this database waits for a row lock. */
const someoneWaits = () =>
  until(
    'a statement waiting for a lock',
    async () =>
      (
        await db.pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      ).rows[0].n,
    (n) => n > 0,
    5000,
  );

async function inTransaction<T>(
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<{ result: T; commit(): Promise<void> }> {
  const client = await db.pool.connect();
  await client.query('BEGIN');
  const result = await fn(client);
  return {
    result,
    async commit() {
      await client.query('COMMIT');
      client.release();
    },
  };
}

describe('no lost wake-up', () => {
  it('a park that waits for a signal being sent sees it, and makes the job pending at once', async () => {
    const j = await claimed();
    const tx = await inTransaction((c) => signal(c, j.id, 'w', { n: 1 }));
    assert.equal(tx.result, 'kept', 'the job is running: the signal is kept');
    const parking = park(j);
    await someoneWaits();
    await tx.commit();
    const [row] = await parking;
    assert.equal(row?.status, 'pending', 'parked after the signal committed: not left waiting');
    assert.deepEqual(await status(j.id), { status: 'pending', waiting_for: null });
  });

  it('a signal that waits for a park sees the job waiting, and wakes it', async () => {
    const j = await claimed();
    const tx = await inTransaction((c) => park(j, { db: c, schema: 'jobvisor' }));
    assert.equal(tx.result[0]?.status, 'waiting');
    const sending = signal(db.pool, j.id, 'w', { n: 2 });
    await someoneWaits();
    await tx.commit();
    assert.equal(await sending, 'woke');
    assert.deepEqual(await status(j.id), { status: 'pending', waiting_for: null });
  });
});

describe('a signal racing the timeout', () => {
  /** A parked job whose deadline has passed. */
  async function overdue() {
    const j = await claimed();
    assert.equal((await park(j))[0]?.status, 'waiting');
    // The deadline is the job's run_at and its wait record's wake_at (both written by the park).
    await db.pool.query(`UPDATE jobvisor.jobs SET run_at = now() - interval '1 second' WHERE id = $1`, [j.id]);
    await db.pool.query(`UPDATE jobvisor.job_steps SET wake_at = now() - interval '1 second' WHERE job_id = $1`, [
      j.id,
    ]);
    return j;
  }

  /** The run that follows the wake: claims the job and decides its wait, twice (the second reads the record). */
  async function resumed(j: { id: string; queue: string }) {
    const [again] = await claimJobs(store, { owner: 'o', queue: j.queue, limit: 1, leaseMs: 60_000 });
    assert.ok(again, 'the job was pending once more');
    const first = await takeWait(db.pool, 'jobvisor', { id: j.id, token: again.token, name: 'w' });
    const second = await takeWait(db.pool, 'jobvisor', { id: j.id, token: again.token, name: 'w' });
    assert.deepEqual(second.result, first.result, 'the decision is recorded once');
    return first.result;
  }

  it('signal first: the timeout pass skips the row it holds, and the run receives the signal', async () => {
    const j = await overdue();
    const tx = await inTransaction((c) => signal(c, j.id, 'w', 'yes'));
    assert.equal(tx.result, 'woke');
    assert.deepEqual(await wakeTimedOutWaits(store, 100), [], 'SKIP LOCKED: the signal is waking it');
    await tx.commit();
    assert.deepEqual(await wakeTimedOutWaits(store, 100), [], 'pending now: nothing left to time out');
    assert.deepEqual(await resumed(j), { received: true, payload: 'yes' });
  });

  it('timeout first: the job resumes once; a signal committed before the run still wins', async () => {
    const j = await overdue();
    const tx = await inTransaction((c) => wakeTimedOutWaits({ db: c, schema: 'jobvisor' }, 100));
    assert.deepEqual(
      tx.result.map((r) => r.id),
      [j.id],
    );
    const sending = signal(db.pool, j.id, 'w', 'late but in time');
    await someoneWaits();
    await tx.commit();
    assert.equal(await sending, 'kept', 'the job is already pending: the signal does not wake it twice');
    assert.deepEqual(await resumed(j), { received: true, payload: 'late but in time' });
  });

  it('timeout decided by the run: a later signal is late and changes nothing', async () => {
    const j = await overdue();
    assert.equal((await wakeTimedOutWaits(store, 100)).length, 1);
    assert.deepEqual(await resumed(j), { received: false });
    assert.equal(await signal(db.pool, j.id, 'w', 'too late'), 'late');
    const { rows } = await db.pool.query('SELECT result FROM jobvisor.job_steps WHERE job_id = $1 AND name = $2', [
      j.id,
      'w',
    ]);
    assert.deepEqual(rows, [{ result: { received: false } }]);
  });
});
