/**
 * The fetcher, driven step by step with runOnce(): it claims up to the free
 * capacity the dispatcher reports, only from its own queue, and hands the
 * claimed jobs over with their claim tokens.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../src/queue/enqueue.ts';
import type { ClaimedJob } from '../src/queue/types.ts';
import { SupervisorEvents } from '../src/supervisor/events.ts';
import { Fetcher } from '../src/supervisor/fetcher.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { until } from './helpers/poll.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('fetcher');
});

after(async () => {
  await db.drop();
});

function fetcher(
  queue: string,
  capacity: () => number,
  delivered: ClaimedJob[],
  prefetch = 0,
  events = new SupervisorEvents(),
): Fetcher {
  return new Fetcher({
    store: { db: db.pool, schema: 'jobvisor' },
    queue,
    settings: { concurrency: 4, jobsPerThread: 4, prefetch, timeout: null },
    owner: 'fetcher-test',
    leaseMs: 60_000,
    maxPayloadBytes: 1024 * 1024,
    pollIntervalMs: 60_000,
    capacity,
    deliver: (jobs) => delivered.push(...jobs),
    events,
  });
}

describe('fetcher', () => {
  it('claims up to the free capacity, from its own queue only, with a token per claim', async () => {
    await enqueueMany(db.pool, [
      ...Array.from({ length: 6 }, (_, i) => ({ kind: 'k', queue: 'mine', payload: { i } })),
      { kind: 'k', queue: 'theirs', payload: {} },
    ]);
    const delivered: ClaimedJob[] = [];
    let free = 4;
    const f = fetcher('mine', () => free, delivered);
    assert.equal(await f.runOnce(), 4);
    assert.equal(delivered.length, 4);
    assert.ok(delivered.every((j) => j.queue === 'mine' && /^\d+$/.test(j.token)));
    assert.equal(new Set(delivered.map((j) => j.token)).size, 4, 'every claim has its own token');
    assert.deepEqual(
      delivered.map((j) => (JSON.parse(j.payload as string) as { i: number }).i),
      [0, 1, 2, 3],
      'in claim order',
    );
    free = 0;
    assert.equal(await f.runOnce(), 0, 'no capacity, no claim');
    free = 10;
    assert.equal(await f.runOnce(), 2, 'what is left of its queue');
    assert.equal(await f.runOnce(), 0);
    await f.stop();
    const { rows } = await db.pool.query("SELECT status FROM jobvisor.jobs WHERE queue = 'theirs'");
    assert.deepEqual(rows, [{ status: 'pending' }], "another queue's job is left alone");
  });

  it('during a backlog a second claim overlaps the first, never a third, and together they stay within capacity', async () => {
    await enqueueMany(
      db.pool,
      Array.from({ length: 20 }, (_, i) => ({ kind: 'k', queue: 'deep', payload: { i } })),
    );
    const delivered: ClaimedJob[] = [];
    const claims: number[] = [];
    const events = new SupervisorEvents();
    events.on('job:claimed', ({ count }) => claims.push(count));
    let places = 3;
    // concurrency 4 + prefetch 8: a batch worth a round trip is 3 places.
    const f = fetcher('deep', () => places - delivered.length, delivered, 8, events);
    assert.equal(await f.runOnce(), 3, 'a full claim: the queue has a backlog');

    // Hold both claims at the table lock their UPDATE takes, to see them in flight together.
    const blocker = await db.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE jobvisor.jobs IN SHARE MODE');
      places = 6;
      f.onCapacity();
      places = 9;
      f.onCapacity();
      places = 12;
      f.onCapacity(); // a third: not while two are under way
      const inFlight = async () =>
        (
          await db.pool.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%lease_token_seq%'",
          )
        ).rows[0]?.n;
      await until('two claims waiting', inFlight, (n) => (n ?? 0) >= 2);
      assert.equal(await inFlight(), 2, 'two claims under way, not three');
      await blocker.query('COMMIT');
    } finally {
      blocker.release();
    }
    // The wake remembered meanwhile claims what is left once both are back.
    await until(
      'every place filled',
      () => delivered.length,
      (n) => n >= 12,
    );
    await f.stop();
    assert.deepEqual(claims, [3, 3, 3, 3], 'each claim took what the places left beside the one under way');
    assert.equal(delivered.length, 12, 'never more than the places');
    assert.equal(new Set(delivered.map((j) => j.id)).size, 12, 'no job twice');
  });

  it('stop() is idempotent and safe before any claim', async () => {
    const f = fetcher('idle', () => 1, []);
    await f.stop();
    await f.stop();
    assert.equal(await f.runOnce(), 0, 'a stopped fetcher claims nothing');
  });
});
