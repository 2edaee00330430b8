/**
 * The fetcher, driven step by step with runOnce(): it claims up to the free
 * capacity the dispatcher reports, only from its own queue, and hands the
 * claimed jobs over with their claim tokens.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { QueueSettings } from '../../src/config/index.ts';
import { KEYLESS_WINDOW } from '../../src/queue/claim_limited.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { ClaimedJob } from '../../src/queue/types.ts';
import { claimStrategyFor } from '../../src/supervisor/claim/choose.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';
import { Fetcher } from '../../src/supervisor/claim/fetcher.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

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
  limits: Partial<QueueSettings> = {},
  events = new SupervisorEvents(),
): Fetcher {
  const settings = { concurrency: 4, jobsPerThread: 4, prefetch: 0, timeout: null, ...limits };
  return new Fetcher({
    queue,
    settings,
    strategy: claimStrategyFor(settings, {
      store: { db: db.pool, schema: 'jobvisor' },
      queue,
      owner: 'fetcher-test',
      leaseMs: 60_000,
      maxPayloadBytes: 1024 * 1024,
      durable: () => false,
    }),
    leaseMs: 60_000,
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

  it('holding nothing, claims for its places first and for its prefetch right after, unasked', async () => {
    await enqueueMany(
      db.pool,
      Array.from({ length: 20 }, (_, i) => ({ kind: 'k', queue: 'burst', payload: { i } })),
    );
    const delivered: ClaimedJob[] = [];
    let held = 0;
    const events = new SupervisorEvents();
    const f = fetcher('burst', () => 4 + 8 - held, delivered, { prefetch: 8 }, events);
    const claims: number[] = [];
    const twelve = new Promise<void>((resolve) =>
      events.on('job:claimed', ({ count }) => {
        claims.push(count);
        held += count;
        if (held >= 12) resolve();
      }),
    );
    assert.equal(await f.runOnce(), 4, 'the first claim fills the places only');
    await twelve;
    assert.deepEqual(claims, [4, 8], 'the prefetch follows at once, without another wake');
    held -= 2; // two jobs finished: 10 held, 2 free, nothing cut
    assert.equal(await f.runOnce(), 2);
    held = 0; // all finished: holding nothing again, the places first
    assert.equal(await f.runOnce(), 4);
    await f.stop(); // waits for the claim that followed: the last 2
    assert.deepEqual(claims, [4, 8, 2, 4, 2]);
    assert.equal(delivered.length, 20);
  });

  it('reads every due job for ones without a key after a window said some may lie beyond it', async () => {
    const add = (n: number, key?: string) =>
      enqueueMany(
        db.pool,
        Array.from({ length: n }, (_, i) => ({ kind: 'k', queue: 'keyed', payload: { i }, concurrencyKey: key })),
      );
    const delivered: ClaimedJob[] = [];
    const f = fetcher('keyed', () => 4, delivered, { perKeyConcurrency: 1 });
    await add(1, 'flood');
    assert.equal(await f.runOnce(), 1, 'the flood key is now at its limit');
    await add(KEYLESS_WINDOW + 10, 'flood');
    const [keyless] = await add(1);
    // The first claim looks in a window of flood jobs and finds none it may take;
    // the next reads on to the keyless job (a retry timer may have run it first).
    await f.runOnce();
    await f.runOnce();
    await f.stop();
    assert.deepEqual(
      delivered.slice(1).map((j) => j.id),
      [keyless?.id],
    );
  });

  it('after a claim that took the due jobs, wakes when the next delayed one comes due, not at the poll', async () => {
    // Sleepers due one after another: the first due-time timer claims the first; the
    // second must not wait for the poll (60 s here).
    const now = Date.now();
    await enqueueMany(db.pool, [
      { kind: 'k', queue: 'stream', runAt: new Date(now + 400), payload: { i: 0 } },
      { kind: 'k', queue: 'stream', runAt: new Date(now + 900), payload: { i: 1 } },
    ]);
    const delivered: ClaimedJob[] = [];
    const f = fetcher('stream', () => 4, delivered);
    assert.equal(await f.runOnce(), 0, 'nothing due yet');
    const claimedAt = await until(
      'both delayed jobs claimed',
      () => (delivered.length === 2 ? Date.now() : undefined),
      (t) => t !== undefined,
      5_000,
      10,
    );
    await f.stop();
    assert.ok(claimedAt! - now < 3_000, `claimed ${claimedAt! - now} ms after enqueueing`);
  });

  it('stop() is idempotent and safe before any claim', async () => {
    const f = fetcher('idle', () => 1, []);
    await f.stop();
    await f.stop();
    assert.equal(await f.runOnce(), 0, 'a stopped fetcher claims nothing');
  });
});
