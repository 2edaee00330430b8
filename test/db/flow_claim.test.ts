/**
 * The limited claim statements against a real PostgreSQL: what each limit
 * lets through, that jobs over a limit keep their attempts, that a hot key
 * does not hold back other keys, that concurrent claimers never share the
 * last slot, and that a crashed holder's slots return when its lease is reaped.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import pg from 'pg';
import type { QueueSettings } from '../../src/config/index.ts';
import {
  claimLimited,
  KEYLESS_WINDOW,
  type KeylessScan,
  RATE_START_DELAY_MS,
  rateWindowMs,
} from '../../src/queue/claim_limited.ts';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { reapExpiredLeases } from '../../src/queue/reaper.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { pagesRead } from '../helpers/explain.ts';
import { maxStartsInWindow as maxInWindow } from '../helpers/flow.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
const store = () => ({ db: db.pool, schema: 'jobvisor' });

before(async () => {
  db = await createTestDatabase('flow_claim');
});
after(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.rate_starts');
});

type Limits = Pick<QueueSettings, 'globalConcurrency' | 'perKeyConcurrency' | 'rateLimit'>;

function claimArgs(limit: number) {
  return { owner: 'test-owner', queue: 'q', limit, leaseMs: 60_000, maxPayloadBytes: 1 << 20 };
}

function claim(
  limits: Limits,
  limit: number,
  extra: { owner?: string; now?: Date; cursor?: string | null; keylessScan?: KeylessScan } = {},
) {
  return claimLimited(store(), {
    ...claimArgs(limit),
    owner: extra.owner ?? 'test-owner',
    limits,
    cursor: extra.cursor ?? null,
    now: extra.now ?? null,
    keylessScan: extra.keylessScan,
  });
}

/** Claims, marks what it claimed done, and claims again: the payloads each claim took, in order. */
async function claimTwice(limits: Limits, limit: number): Promise<[unknown[], unknown[]]> {
  const payloads = async () => (await claim(limits, limit)).jobs.map((j) => JSON.parse(j.payload as string) as unknown);
  const first = await payloads();
  await db.pool.query("UPDATE jobvisor.jobs SET status = 'done' WHERE status = 'running'");
  return [first, await payloads()];
}

async function add(n: number, key?: (i: number) => string | undefined): Promise<void> {
  const jobs: JobSpec[] = [];
  for (let i = 0; i < n; i++) jobs.push({ kind: 'k', queue: 'q', payload: { i }, concurrencyKey: key?.(i) });
  await enqueueMany(db.pool, jobs);
}

async function running(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running'",
  );
  return rows[0]?.n ?? 0;
}

describe('globalConcurrency', () => {
  it('claims only up to the limit across claimers; a finished job frees its slot; waiting jobs keep attempt 0', async () => {
    await add(10);
    const a = await claim({ globalConcurrency: 3 }, 10, { owner: 'a' });
    assert.equal(a.jobs.length, 3);
    assert.equal(a.full, false, 'the limit, not the local places, cut the claim');
    const b = await claim({ globalConcurrency: 3 }, 10, { owner: 'b' });
    assert.equal(b.jobs.length, 0);
    await db.pool.query("UPDATE jobvisor.jobs SET status = 'done' WHERE id = $1", [a.jobs[0]?.id]);
    const c = await claim({ globalConcurrency: 3 }, 10, { owner: 'b' });
    assert.equal(c.jobs.length, 1);
    const { rows } = await db.pool.query<{ attempts: number }>(
      "SELECT attempts FROM jobvisor.jobs WHERE status = 'pending'",
    );
    assert.equal(rows.length, 6);
    assert.ok(rows.every((r) => r.attempts === 0));
  });

  it('takes due jobs in priority order past delayed ones of a higher priority, within the limit', async () => {
    await enqueueMany(db.pool, [
      ...Array.from({ length: 3 }, (_, i) => ({
        kind: 'k',
        queue: 'q',
        payload: { delayed: i },
        priority: -10,
        runAt: new Date(Date.now() + 86_400_000),
      })),
      { kind: 'k', queue: 'q', payload: { p: 5 }, priority: 5 },
      { kind: 'k', queue: 'q', payload: { p: -1 }, priority: -1 },
      { kind: 'k', queue: 'q', payload: { p: 2 }, priority: 2 },
    ]);
    const [first, second] = await claimTwice({ globalConcurrency: 2 }, 10);
    assert.deepEqual(first, [{ p: -1 }, { p: 2 }]);
    assert.deepEqual(second, [{ p: 5 }], 'the delayed jobs are not due');
  });

  it('ten claimers at once never hold more than the limit', async () => {
    await add(200);
    for (let round = 0; round < 5; round++) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => claim({ globalConcurrency: 7 }, 5, { owner: `o${i}` })));
      assert.equal(await running(), 7);
    }
  });

  it("a crashed holder's slots stay taken until its lease is reaped, then come back", async () => {
    await add(5);
    const t0 = new Date();
    const held = await claimLimited(store(), {
      owner: 'crashed',
      queue: 'q',
      limit: 2,
      leaseMs: 1000,
      maxPayloadBytes: 1 << 20,
      limits: { globalConcurrency: 2 },
      now: t0,
    });
    assert.equal(held.jobs.length, 2);
    assert.equal((await claim({ globalConcurrency: 2 }, 5, { now: new Date(t0.getTime() + 500) })).jobs.length, 0);
    // Lease over but not yet reaped: still held (the holder may only be slow).
    assert.equal((await claim({ globalConcurrency: 2 }, 5, { now: new Date(t0.getTime() + 1500) })).jobs.length, 0);
    const reaped = await reapExpiredLeases(store(), 100, new Date(t0.getTime() + 1500));
    assert.equal(reaped.length, 2);
    const after = await claim({ globalConcurrency: 2 }, 5, { now: new Date(t0.getTime() + 1600) });
    assert.equal(after.jobs.length, 2);
    assert.equal(await running(), 2);
  });
});

describe('perKeyConcurrency', () => {
  it('a hot key with 10,000 jobs enqueued first does not hold back the other keys', async () => {
    await add(10_000, () => 'hot');
    await add(5, (i) => `cold-${i}`);
    const first = await claim({ perKeyConcurrency: 1 }, 10);
    const keys = await keysOf(first.jobs.map((j) => j.id));
    assert.deepEqual(keys.sort(), ['cold-0', 'cold-1', 'cold-2', 'cold-3', 'cold-4', 'hot']);
    const second = await claim({ perKeyConcurrency: 1 }, 10);
    assert.equal(second.jobs.length, 0, 'every key is at its limit');
  });

  it('serves keys round robin from where the last claim stopped', async () => {
    await add(30, (i) => `k${String(i % 10).padStart(2, '0')}`);
    const a = await claim({ perKeyConcurrency: 2 }, 4);
    const keysA = await keysOf(a.jobs.map((j) => j.id));
    assert.deepEqual(keysA.sort(), ['k00', 'k01', 'k02', 'k03']);
    const b = await claim({ perKeyConcurrency: 2 }, 4, { cursor: a.cursor });
    const keysB = await keysOf(b.jobs.map((j) => j.id));
    assert.deepEqual(keysB.sort(), ['k04', 'k05', 'k06', 'k07']);
    const c = await claim({ perKeyConcurrency: 2 }, 4, { cursor: b.cursor });
    const keysC = await keysOf(c.jobs.map((j) => j.id));
    assert.deepEqual(keysC.sort(), ['k08', 'k08', 'k09', 'k09'], 'later keys first, up to their limit');
    const d = await claim({ perKeyConcurrency: 2 }, 4, { cursor: c.cursor });
    const keysD = await keysOf(d.jobs.map((j) => j.id));
    assert.deepEqual(keysD.sort(), ['k00', 'k01', 'k02', 'k03'], 'then round to the first keys again');
  });

  it("takes a key's due jobs in priority order, past its own delayed ones", async () => {
    const at = (days: number) => new Date(Date.now() + days * 86_400_000);
    const job = (p: number, runAt?: Date) => ({
      kind: 'k',
      queue: 'q',
      payload: { p },
      priority: p,
      runAt,
      concurrencyKey: 't',
    });
    await enqueueMany(db.pool, [job(-5, at(1)), job(5), job(2), job(2, at(1)), job(7), job(0, at(1)), job(2)]);
    const [first, second] = await claimTwice({ perKeyConcurrency: 3 }, 10);
    assert.deepEqual(first, [{ p: 2 }, { p: 2 }, { p: 5 }]);
    assert.deepEqual(second, [{ p: 7 }], 'the delayed jobs are not due');
  });

  it("reads none of a key's own delayed jobs (its retries waiting out their backoff), whatever their number", async () => {
    // One tenant whose jobs keep failing: thousands of retries wait, at its
    // priority and at a higher one, while one of its jobs is due.
    const delay = (n: number, priority: number) =>
      db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, queue, concurrency_key, priority, run_at)
         SELECT 'k', 'q', 'tenant', $2, now() + interval '1 hour' FROM generate_series(1, $1::int)`,
        [n, priority],
      );
    const read = async () => {
      await add(1, () => 'tenant');
      const warm = (s: Store) =>
        claimLimited(s, { ...claimArgs(5), queue: 'elsewhere', limits: { perKeyConcurrency: 5 } });
      const once = (s: Store) => claimLimited(s, { ...claimArgs(5), limits: { perKeyConcurrency: 5 } });
      const { value, pages, plan } = await pagesRead(db.url, warm, once, /claim_key_limited/, true);
      assert.equal(value.jobs.length, 1, 'the due job');
      // The claimed row is found by its id, not by reading every pending job (inside jobvisor.claim_key_limited()).
      assert.match(plan, /jobs_pkey[^\n]*\n[^\n]*Index Cond: \(id = ANY/, plan);
      await db.pool.query("UPDATE jobvisor.jobs SET status = 'done' WHERE status = 'running'");
      return pages;
    };
    await delay(1_000, 0);
    await delay(1_000, -1);
    const small = await read();
    await delay(9_000, 0);
    await delay(9_000, -1);
    // Fresh statistics, as an autovacuum leaves them (on one CI run, mid-test): the plans hold.
    await db.pool.query('ANALYZE jobvisor.jobs');
    const large = await read();
    assert.ok(large < small * 1.5, `${small} pages behind 2,000 delayed jobs of the key, ${large} behind 20,000`);
  });

  it('claims in one round trip, costed far below jit_above_cost', async () => {
    // A backlog that costed the claim above jit_above_cost while the key walk was part of
    // the statement: it was sent with JIT off, in a transaction of three round trips.
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, queue, payload, concurrency_key)
       SELECT 'k', 'q', '{}', 'k' || (i % 10000) FROM generate_series(1, 100000) AS i`,
    );
    for (const analyze of [false, true]) {
      if (analyze) await db.pool.query('ANALYZE jobvisor.jobs');
      const once = (s: Store) => claimLimited(s, { ...claimArgs(50), limits: { perKeyConcurrency: 1 } });
      const { value, plan } = await pagesRead(db.url, () => Promise.resolve(), once, /claim_key_limited/);
      assert.equal(value.jobs.length, 50);
      const cost = Number(/\(cost=[\d.]+\.\.([\d.]+)/.exec(plan)?.[1]);
      assert.ok(cost < 1000, `costed at ${cost} (jit_above_cost: 100,000): ${plan}`);
      assert.doesNotMatch(plan, /JIT:/, plan);
    }
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const sent: string[] = [];
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const q = args[0];
        sent.push(typeof q === 'string' ? q : (q as { text: string }).text);
        return query(...args);
      };
      const got = await claimLimited(
        { db: client, schema: 'jobvisor' },
        {
          ...claimArgs(50),
          limits: { perKeyConcurrency: 1 },
        },
      );
      assert.equal(got.jobs.length, 50);
      assert.equal(sent.length, 1, sent.join('\n'));
    } finally {
      await client.end();
    }
  });

  it('jobs without a key have no per-key limit', async () => {
    await add(5);
    await add(5, () => 'x');
    const got = await claim({ perKeyConcurrency: 1 }, 20);
    assert.equal(got.jobs.length, 6);
    const windowed = await claim({ perKeyConcurrency: 1 }, 20, { keylessScan: 'window' });
    assert.equal(windowed.keylessHidden, false, 'a window that is not full hides nothing');
  });

  it('a window read says when jobs without a key may lie behind a flood of one key; a full read finds them', async () => {
    // The flood's key is at its limit, and KEYLESS_WINDOW of its due jobs come before the keyless one.
    await add(1, () => 'flood');
    assert.equal((await claim({ perKeyConcurrency: 1 }, 10)).jobs.length, 1);
    await add(KEYLESS_WINDOW + 10, () => 'flood');
    await add(1);
    const windowed = await claim({ perKeyConcurrency: 1 }, 10, { keylessScan: 'window' });
    assert.equal(windowed.jobs.length, 0);
    assert.equal(windowed.keylessHidden, true);
    const full = await claim({ perKeyConcurrency: 1 }, 10, { keylessScan: 'all' });
    assert.deepEqual(await keysOf(full.jobs.map((j) => j.id)), [null]);
    assert.equal(full.keylessHidden, false);
  });

  it('a claim told to read no window takes only keyed jobs and says jobs without a key may lie beyond', async () => {
    await add(3);
    await add(3, (i) => `k${i}`);
    const none = await claim({ perKeyConcurrency: 1 }, 20, { keylessScan: 'none' });
    assert.deepEqual((await keysOf(none.jobs.map((j) => j.id))).sort(), ['k0', 'k1', 'k2']);
    assert.equal(none.keylessHidden, true);
    const windowed = await claim({ perKeyConcurrency: 1 }, 20, { keylessScan: 'window' });
    assert.deepEqual(await keysOf(windowed.jobs.map((j) => j.id)), [null, null, null]);
  });

  it('a window read costs the same behind 20,000 jobs of a key at its limit as behind 2,000', async () => {
    await add(1, () => 'flood');
    assert.equal((await claim({ perKeyConcurrency: 1 }, 10)).jobs.length, 1);
    const read = async (scan: 'all' | 'window') => {
      const once = (s: Store) =>
        claimLimited(s, { ...claimArgs(10), limits: { perKeyConcurrency: 1 }, keylessScan: scan });
      return (await pagesRead(db.url, once, once, /claim_key_limited/)).pages;
    };
    await add(2_000, () => 'flood');
    const small = await read('window');
    // The statistics are those of the ANALYZE in the test before (mostly delayed jobs): guessing
    // 1,380 due jobs of the 20,000, the claim read them all through a bitmap and sorted them to
    // keep 1,000 (804 pages against 95), until its plan priced bitmaps out.
    await add(18_000, () => 'flood');
    const large = await read('window');
    const all = await read('all');
    assert.ok(large < small * 1.5, `window: ${small} pages behind 2,000, ${large} behind 20,000`);
    assert.ok(all > large * 5, `reading them all: ${all} pages, a window: ${large}`);
  });

  // Migration 035: a per-key claim holds its keys' locks and the queue's lock shared.
  it('claims side by side: a claim under way holds only its keys, and a second takes the others, never one of them', async () => {
    await add(20, (i) => `k${String(i % 10).padStart(2, '0')}`);
    await withOpenClaim({ perKeyConcurrency: 1 }, 3, async (first) => {
      const held = await keysOf(first);
      assert.equal(held.length, 3);
      // Before 035 this claim waited for the queue's lock, and lock_timeout ended it.
      const second = await claimWithLockTimeout({ perKeyConcurrency: 1 }, 10);
      const keys = await keysOf(second.jobs.map((j) => j.id));
      assert.equal(keys.length, 7, `the 7 keys not held: ${keys.join(', ')}`);
      for (const key of keys) assert.ok(!held.includes(key), `${key} is held by the claim under way`);
      assert.ok(second.keysWaiting, 'the keys held are waiting, not empty');
    });
    assert.deepEqual(await mostRunningPerKey(), { most: 1, total: 10 });
  });

  it('a claim that counts the whole queue waits for a per-key claim under way (a config changed on one supervisor)', async () => {
    await add(20, (i) => `k${String(i % 10).padStart(2, '0')}`);
    const both = { globalConcurrency: 100, perKeyConcurrency: 1 };
    await withOpenClaim({ perKeyConcurrency: 1 }, 3, async () => {
      await assert.rejects(claimWithLockTimeout(both, 10), { code: '55P03' });
    });
    const after = await claim(both, 10);
    assert.equal(after.jobs.length, 7);
    assert.deepEqual(await mostRunningPerKey(), { most: 1, total: 10 });
  });

  it('a claim locks 512 keys at most (a bound on its advisory locks); the rest wait for the next claim', async () => {
    await add(1200, (i) => `k${String(i).padStart(4, '0')}`);
    await withOpenClaim({ perKeyConcurrency: 1 }, 3, async (first) => {
      const held = await keysOf(first);
      const second = await claimWithLockTimeout({ perKeyConcurrency: 1 }, 1200);
      const keys = await keysOf(second.jobs.map((j) => j.id));
      // The first 512 keys with room (the 3 held look free to its count, taken before the locks), less those 3.
      assert.equal(keys.length, 509);
      for (const key of keys) assert.ok(!held.includes(key), `${key} is held by the claim under way`);
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      assert.ok(rows[0]!.n <= 3 + 1, `${rows[0]!.n} advisory locks held by the claim left open`);
    });
    assert.equal((await claim({ perKeyConcurrency: 1 }, 1200)).jobs.length, 512);
    assert.deepEqual(await mostRunningPerKey(), { most: 1, total: 1024 });
  });

  it('ten claimers at once, with and without a queue-wide limit, never hold more than the limit of a key', async () => {
    await add(400, (i) => `k${String(i % 40).padStart(2, '0')}`);
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          claim(i % 3 === 0 ? { globalConcurrency: 1000, perKeyConcurrency: 2 } : { perKeyConcurrency: 2 }, 7, {
            owner: `o${i}`,
          }),
        ),
      );
      const { most, total } = await mostRunningPerKey();
      assert.ok(most <= 2, `a key holds ${most} slots`);
      assert.ok(total >= Math.min(80, 7 * (round + 1)), `${total} running after round ${round}`);
      await db.pool.query(
        "UPDATE jobvisor.jobs SET status = 'done' WHERE id IN (SELECT id FROM jobvisor.jobs WHERE status = 'running' ORDER BY id LIMIT 20)",
      );
    }
  });

  // Migration 036: a key with room for one job is offered the first entry its walk read, before the locks.
  it("never claims a job its walk saw due that was put back for later before the claim's locks", async () => {
    await add(1, () => 'a');
    await add(2, () => 'b');
    const [first, second] = (
      await db.pool.query<{ id: string }>("SELECT id FROM jobvisor.jobs WHERE concurrency_key = 'b' ORDER BY id")
    ).rows.map((r) => r.id);
    const both = { globalConcurrency: 100, perKeyConcurrency: 1 };
    let waiting: ReturnType<typeof claimWithLockTimeout> | undefined;
    // A claim that counts the whole queue holds the queue's lock; the per-key claim walks the keys, then waits for it.
    await withOpenClaim(both, 1, async (taken) => {
      assert.equal((await keysOf(taken)).join(), 'a');
      waiting = claimWithLockTimeout({ perKeyConcurrency: 1 }, 10, '30s');
      await until('the per-key claim waits for the queue lock', lockWaits, (n) => n > 0);
      // Meanwhile b's first job ran and failed: it is pending again, due in an hour.
      await db.pool.query("UPDATE jobvisor.jobs SET run_at = now() + interval '1 hour' WHERE id = $1", [first]);
    });
    const claimed = (await waiting!).jobs.map((j) => j.id);
    assert.ok(!claimed.includes(first!), `claimed ${claimed.join()}: b's first job is not due`);
    const { rows } = await db.pool.query<{ status: string; later: boolean }>(
      'SELECT status, run_at > now() AS later FROM jobvisor.jobs WHERE id = $1',
      [first],
    );
    assert.deepEqual(rows[0], { status: 'pending', later: true });
    const next = await claim({ perKeyConcurrency: 1 }, 10);
    assert.deepEqual([...claimed, ...next.jobs.map((j) => j.id)], [second], "b's due job, by this claim or the next");
  });
});

async function lockWaits(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
  );
  return rows[0]!.n;
}

/** Runs `body` while a per-key claim of `limit` is open in a transaction of its own (its locks held), then commits it. */
async function withOpenClaim(limits: Limits, limit: number, body: (ids: string[]) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query('BEGIN');
    const first = await claimLimited({ db: client, schema: 'jobvisor' }, { ...claimArgs(limit), limits });
    await body(first.jobs.map((j) => j.id));
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}

/** A claim on a connection of its own that gives up on any lock after `timeout` (error 55P03). */
async function claimWithLockTimeout(limits: Limits, limit: number, timeout = '1s') {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query(`SET lock_timeout = '${timeout}'`);
    return await claimLimited({ db: client, schema: 'jobvisor' }, { ...claimArgs(limit), owner: 'second', limits });
  } finally {
    await client.end();
  }
}

async function mostRunningPerKey(): Promise<{ most: number; total: number }> {
  const { rows } = await db.pool.query<{ most: number; total: number }>(
    `SELECT coalesce(max(n), 0)::int AS most, coalesce(sum(n), 0)::int AS total
       FROM (SELECT count(*) AS n FROM jobvisor.jobs WHERE status = 'running' GROUP BY concurrency_key) AS c`,
  );
  return rows[0] ?? { most: 0, total: 0 };
}

describe('rateLimit', () => {
  it('paces starts one every window/count, from at least the start delay ahead: no window of the period holds more than count', async () => {
    await add(60);
    const t0 = new Date('2030-01-01T00:00:00Z');
    const at = (ms: number) => new Date(t0.getTime() + ms);
    const rate = { count: 5, periodMs: 1000, perKey: false };
    const step = rateWindowMs(1000) / 5;
    const starts: number[] = [];
    for (const [when, places] of [
      [0, 3],
      [400, 10],
      [450, 10],
      [460, 10],
      [2000, 2],
      [2100, 10],
      [5000, 10],
    ] as const) {
      const got = await claim({ rateLimit: rate }, places, { now: at(when) });
      got.startAtMs.forEach((s) => assert.ok(s - t0.getTime() >= when + RATE_START_DELAY_MS - 0.001));
      starts.push(...got.startAtMs.map((s) => s - t0.getTime()));
      if (when === 450) assert.equal(got.jobs.length, 1, 'the one slot left within the horizon');
      if (when === 460) {
        assert.equal(got.jobs.length, 0, 'a full horizon hands out nothing');
        assert.ok(got.nextFreeMs !== null && got.nextFreeMs > 0);
      }
    }
    const sorted = [...starts].sort((x, y) => x - y);
    for (let i = 1; i < sorted.length; i++)
      assert.ok((sorted[i] as number) - (sorted[i - 1] as number) >= step - 0.001);
    const d = RATE_START_DELAY_MS;
    assert.deepEqual(sorted.slice(0, 3), [d, d + step, d + 2 * step]);
    assert.ok(maxInWindow(sorted, 1000) <= 5);
    assert.equal(starts.length, 3 + 4 + 1 + 0 + 2 + 4 + 5);
    const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobvisor.rate_starts');
    assert.ok((rows[0]?.n ?? 0) <= 5, 'starts older than the window are pruned');
  });

  it('perKey: one window per key', async () => {
    await add(20, (i) => `k${i % 2}`);
    const rate = { count: 3, periodMs: 60_000, perKey: true };
    const got = await claim({ rateLimit: rate }, 20);
    assert.equal(got.jobs.length, 6);
    assert.equal((await claim({ rateLimit: rate }, 20)).jobs.length, 0);
  });
});

async function keysOf(ids: string[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ concurrency_key: string }>(
    'SELECT concurrency_key FROM jobvisor.jobs WHERE id = ANY($1::bigint[])',
    [ids],
  );
  return rows.map((r) => r.concurrency_key);
}
