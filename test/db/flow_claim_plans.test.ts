/**
 * A limited claim's choice is planned once per connection, not on every
 * claim: the functions of migration 031 keep generic plans of their
 * statements. Left to PostgreSQL's plan cache, which keeps a generic plan only
 * when its estimate is no dearer than the custom plans', they were planned
 * again on every call (limit_state() took 0.72 ms a call, 0.21 with its plans
 * kept). Each planning is counted with log_planner_stats, which reports every
 * plan made to the client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { QueueSettings } from '../../src/config/index.ts';
import { claimLimited } from '../../src/queue/claim_limited.ts';
import { completeJobs } from '../../src/queue/complete.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { withPlans } from '../helpers/explain.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('flow_claim_plans');
});
after(async () => {
  await db.drop();
});

type Limits = Pick<QueueSettings, 'globalConcurrency' | 'perKeyConcurrency' | 'rateLimit'>;

/** How many plans the `claims`-th claim made, on one connection, after `claims - 1` claims of 5 jobs. */
async function plansOfClaim(queue: string, limits: Limits, claims: number): Promise<number> {
  await enqueueMany(
    db.pool,
    Array.from({ length: 100 }, (_, i) => ({ kind: 'k', queue, payload: { i }, concurrencyKey: `k${i % 10}` })),
  );
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  let plans = 0;
  client.on('notice', (n) => {
    if (/PLANNER STATISTICS/.test(n.message ?? '')) plans++;
  });
  try {
    await client.query('SET log_planner_stats = on; SET client_min_messages = log');
    const store = { db: client as unknown as pg.Pool, schema: 'jobvisor' };
    let cursor: string | null = null;
    for (let i = 1; i <= claims; i++) {
      plans = 0;
      const args = { owner: 'o', queue, limit: 5, leaseMs: 60_000, maxPayloadBytes: 1 << 20 };
      const got = await claimLimited(store, { ...args, limits, cursor, keylessScan: 'window' });
      assert.ok(got.jobs.length > 0, `claim ${i} took jobs`);
      cursor = got.cursor;
      await completeJobs(
        { db: db.pool, schema: 'jobvisor' },
        'o',
        got.jobs.map((j) => j.id),
        got.jobs.map((j) => j.token),
      );
    }
    return plans;
  } finally {
    await client.end();
  }
}

describe('a limited claim on a warm connection', () => {
  // The claim statement itself is sent unnamed and planned each time (sql.ts says why): one plan.
  // The functions' statements add none (before this change: one more on every claim).
  it('queue-wide (globalConcurrency): only the claim statement is planned', async () => {
    assert.equal(await plansOfClaim('g', { globalConcurrency: 50 }, 10), 1);
  });

  it('per key (perKeyConcurrency): only the claim statement is planned', async () => {
    assert.equal(await plansOfClaim('p', { perKeyConcurrency: 1 }, 10), 1);
  });
});

/**
 * The plans of the statements that look up the runs passed as ended, for a claim that passes 400
 * of this owner's 500 running runs, made while the statistics (gathered with nothing running, as
 * they mostly are) know of no running row; and how many of those runs the claim found.
 */
async function endedLookups(queue: string, limits: Limits): Promise<{ plans: string[]; found: number }> {
  await enqueueMany(
    db.pool,
    Array.from({ length: 600 }, (_, i) => ({ kind: 'k', queue, payload: { i }, concurrencyKey: `k${i}` })),
  );
  await db.pool.query('ANALYZE jobvisor.jobs');
  const store = { db: db.pool, schema: 'jobvisor' };
  const args = { owner: 'o', queue, leaseMs: 60_000, maxPayloadBytes: 1 << 20, limits, keylessScan: 'window' as const };
  const running = await claimLimited(store, { ...args, limit: 500 });
  assert.equal(running.jobs.length, 500);
  const ended = running.jobs.slice(0, 400).map((j) => ({ id: j.id, token: j.token }));
  const settings = ['SET auto_explain.log_analyze = on', 'SET auto_explain.log_nested_statements = on'];
  return withPlans(db.url, settings, async (s, plans) => {
    const claim = await claimLimited(s, { ...args, limit: 10, ended });
    return {
      plans: plans.filter((p) => /Query Text: WITH (ended AS MATERIALIZED|held AS) \(/.test(p)),
      found: claim.ended.length,
    };
  });
}

describe('the runs a claim passes as ended', () => {
  // Joined with unnest(ids, tokens), they were matched against every running row of the owner,
  // once in a hash table, or (as planned in a benchmark) each row against every run passed:
  // 0.4 ms of a 2-ms claim of 50, and growing with the runs in flight (migration 037).
  for (const [queue, limits, lookups] of [
    ['ended_g', { globalConcurrency: 1000 }, 1],
    ['ended_k', { perKeyConcurrency: 1 }, 2],
  ] as const)
    it(`are read by their ids through an index (${Object.keys(limits)[0]})`, async () => {
      const { plans, found } = await endedLookups(queue, limits);
      assert.equal(found, 400, 'every run passed is found');
      assert.equal(plans.length, lookups, plans.join('\n'));
      for (const plan of plans) assert.match(plan, /Index Cond: \(id = ANY \(\$\d+\)\)/, plan);
    });
});

/**
 * The plan of the count a per-key claim makes before its key locks (the keys it visited, each
 * with its running rows), for a claim that visits 600 keys, 500 of them with a job running.
 */
async function keyCountPlan(): Promise<{ plan: string; keys: number }> {
  const queue = 'held_k';
  await enqueueMany(
    db.pool,
    Array.from({ length: 1200 }, (_, i) => ({ kind: 'k', queue, payload: { i }, concurrencyKey: `k${i % 600}` })),
  );
  const store = { db: db.pool, schema: 'jobvisor' };
  const limits = { perKeyConcurrency: 1 };
  const args = { owner: 'o', queue, leaseMs: 60_000, maxPayloadBytes: 1 << 20, limits, keylessScan: 'none' as const };
  const running = await claimLimited(store, { ...args, limit: 500, maxKeys: 600 });
  assert.equal(running.jobs.length, 500);
  const settings = ['SET auto_explain.log_analyze = on', 'SET auto_explain.log_nested_statements = on'];
  return withPlans(db.url, settings, async (s, plans) => {
    const claim = await claimLimited(s, { ...args, limit: 100, maxKeys: 600 });
    assert.equal(claim.jobs.length, 100, 'the 100 keys with no job running each give one');
    const counts = plans.filter((p) => /Query Text: WITH held AS \(/.test(p));
    assert.equal(counts.length, 1, plans.join('\n'));
    return { plan: counts[0] as string, keys: claim.keysVisited };
  });
}

describe('the count of the keys a per-key claim visited', () => {
  // Joined with the counts, the visited keys were matched by a plan made once per connection from
  // the statistics of the moment: a hash or merge join, or, planned from statistics that knew
  // little running, a nested loop that compared every visited key with every key counted (over
  // 1,000 keys a million comparisons, 11 ms of a 25-ms claim, in 4 of 10 benchmark runs).
  // Migration 038 looks each key up in a map of the counts: no join for the statistics to choose.
  it('looks each visited key up in the counts, with no join of the two', async () => {
    const { plan, keys } = await keyCountPlan();
    assert.equal(keys, 600, 'the walk visited every key');
    assert.doesNotMatch(plan, /\bh\.k = k\.key\b|\bk\.key = h\.k\b/, plan);
  });
});
