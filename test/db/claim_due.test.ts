/**
 * One meaning of "due" across every claim (the list is in src/queue/claim.ts):
 * a pending job whose run_at has come, taken highest priority (lowest number)
 * first, then run_at, then id. The same jobs are put in a plain queue, a
 * queue-wide limited queue and a per-key limited queue, on a real PostgreSQL:
 * mixed priorities, run_at in the past and the future, several keys and none,
 * and jobs in every other status, `blocked` included (the status workflows
 * add; the test database's CHECK is widened for it here). The claims must
 * agree on which jobs are due and, within each key, on their order, and the
 * next-due time after them must agree too.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { claimJobs, nextDueIn } from '../../src/queue/claim.ts';
import { claimLimited } from '../../src/queue/claim_limited.ts';
import type { ClaimedJob } from '../../src/queue/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
const store = () => ({ db: db.pool, schema: 'jobvisor' });
/** The claims' pinned clock: run_at is set relative to it. */
const NOW = new Date('2030-01-01T12:00:00Z');
const QUEUES = ['plain', 'global', 'keyed'] as const;

before(async () => {
  db = await createTestDatabase('claim_due');
  await db.pool.query(`ALTER TABLE jobvisor.jobs DROP CONSTRAINT jobs_status_check,
    ADD CONSTRAINT jobs_status_check CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled', 'blocked'))`);
});
after(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.rate_starts');
});

interface Spec {
  name: string;
  priority: number;
  /** Seconds from NOW (negative: in the past). */
  at: number;
  key: string | null;
  status?: string;
}

/** Every row goes into each queue, in a shuffled order so ids do not follow the specs. */
async function insert(specs: Spec[]): Promise<void> {
  const order = specs.map((s, i) => ({ s, r: (i * 7919) % 101 })).sort((a, b) => a.r - b.r);
  for (const queue of QUEUES)
    for (const { s } of order)
      await db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, queue, payload, priority, run_at, concurrency_key, status, locked_until)
         VALUES ('k', $1, $2, $3, $4::timestamptz + $5::float8 * interval '1 second', $6, $7,
                 CASE WHEN $7 IN ('running', 'cancelled') THEN $4::timestamptz - interval '1 hour' END)`,
        [queue, JSON.stringify({ name: s.name }), s.priority, NOW, s.at, s.key, s.status ?? 'pending'],
      );
}

const names = (jobs: ClaimedJob[]) => jobs.map((j) => (JSON.parse(j.payload ?? '{}') as { name: string }).name);
const args = (queue: string, limit: number) => ({
  owner: 'due-test',
  queue,
  limit,
  leaseMs: 60_000,
  maxPayloadBytes: 1 << 20,
  now: NOW,
});

/** The job names each claim takes, with as many places as `limit`. */
async function claimAll(limit: number, perKey: number) {
  const plain = names(await claimJobs(store(), args('plain', limit)));
  const global = names(
    (await claimLimited(store(), { ...args('global', limit), limits: { globalConcurrency: 10_000 } })).jobs,
  );
  const keyed = names(
    (
      await claimLimited(store(), {
        ...args('keyed', limit),
        limits: { perKeyConcurrency: perKey },
        cursor: null,
        keylessScan: 'all',
      })
    ).jobs,
  );
  return { plain, global, keyed };
}

/** The same mix as a plain SELECT states "due": pending, run_at ≤ now, by priority, run_at, id. */
const SPECS: Spec[] = [
  // key a: its best priority is not due yet, so its first due job is of a lower priority.
  { name: 'a-p-5-future', priority: -5, at: 60, key: 'a' },
  { name: 'a-p3-past', priority: 3, at: -30, key: 'a' },
  { name: 'a-p3-older', priority: 3, at: -90, key: 'a' },
  { name: 'a-p10-past', priority: 10, at: -1, key: 'a' },
  { name: 'a-p0-now', priority: 0, at: 0, key: 'a' },
  // key b: the best priority overall, one job not yet due in between.
  { name: 'b-p-5-past', priority: -5, at: -10, key: 'b' },
  { name: 'b-p0-future', priority: 0, at: 5, key: 'b' },
  { name: 'b-p0-past', priority: 0, at: -5, key: 'b' },
  // key c: only future jobs and jobs in other statuses: nothing due.
  { name: 'c-p0-future', priority: 0, at: 3600, key: 'c' },
  { name: 'c-p-9-blocked', priority: -9, at: -100, key: 'c', status: 'blocked' },
  // no key
  { name: 'n-p1-past', priority: 1, at: -20, key: null },
  { name: 'n-p-5-past', priority: -5, at: -1, key: null },
  { name: 'n-p1-future', priority: 1, at: 1, key: null },
  // never due, whatever their priority and run_at: not pending.
  { name: 'x-blocked', priority: -100, at: -1000, key: null, status: 'blocked' },
  { name: 'x-blocked-a', priority: -100, at: -1000, key: 'a', status: 'blocked' },
  { name: 'x-running', priority: -100, at: -1000, key: null, status: 'running' },
  { name: 'x-done', priority: -100, at: -1000, key: null, status: 'done' },
  { name: 'x-failed', priority: -100, at: -1000, key: 'a', status: 'failed' },
  { name: 'x-cancelled', priority: -100, at: -1000, key: 'b', status: 'cancelled' },
  // ... nor ahead of due jobs of their own priority, which the walks visit: taken as
  // offers, they would fill a key's room or the claim's places and crowd out a due job.
  { name: 'x-blocked-b-p-5', priority: -5, at: -100, key: 'b', status: 'blocked' },
  { name: 'x-blocked-n-p-5', priority: -5, at: -100, key: null, status: 'blocked' },
  { name: 'x-done-a-p0', priority: 0, at: -200, key: 'a', status: 'done' },
];

const keyOf = (name: string) => SPECS.find((s) => s.name === name)?.key ?? null;

describe('what "due" means, in every claim', () => {
  it('a plain, a queue-wide limited and a per-key limited queue take the same due jobs, in priority order', async () => {
    await insert(SPECS);
    const { rows } = await db.pool.query<{ name: string }>(
      `SELECT payload->>'name' AS name FROM jobvisor.jobs
        WHERE queue = 'plain' AND status = 'pending' AND run_at <= $1 ORDER BY priority, run_at, id`,
      [NOW],
    );
    const expected = rows.map((r) => r.name);
    assert.deepEqual(expected, [
      'b-p-5-past',
      'n-p-5-past',
      'b-p0-past',
      'a-p0-now',
      'n-p1-past',
      'a-p3-older',
      'a-p3-past',
      'a-p10-past',
    ]);

    const { plain, global, keyed } = await claimAll(100, 100);
    assert.deepEqual(plain, expected, 'the plain claim');
    assert.deepEqual(global, expected, 'the queue-wide limited claim');
    // The per-key claim serves keys round robin, so only the set and each key's order compare.
    assert.deepEqual([...keyed].sort(), [...expected].sort(), 'the per-key claim takes the same jobs');
    for (const key of ['a', 'b', null])
      assert.deepEqual(
        keyed.filter((n) => keyOf(n) === key),
        expected.filter((n) => keyOf(n) === key),
        `key ${key}: the same priority order`,
      );

    // With the due jobs claimed, the next one due is the same for all three: n-p1-future, in 1 s.
    for (const queue of QUEUES) assert.equal(await nextDueIn(store(), queue, NOW), 1000, queue);
  });

  it("one place per key takes each key's first due job, past a better priority not yet due", async () => {
    await insert(SPECS);
    const { plain, keyed } = await claimAll(100, 1);
    const firstOf = (key: string) => plain.find((n) => keyOf(n) === key);
    const keyedWithKey = keyed.filter((n) => keyOf(n) !== null).sort();
    assert.deepEqual(keyedWithKey, [firstOf('a'), firstOf('b')].sort());
    assert.deepEqual(keyedWithKey, ['a-p0-now', 'b-p-5-past']);
    assert.deepEqual(
      keyed.filter((n) => keyOf(n) === null),
      ['n-p-5-past', 'n-p1-past'],
    );
  });

  it('fewer places than due jobs: the plain and the queue-wide claim take the same head', async () => {
    await insert(SPECS);
    const { plain, global, keyed } = await claimAll(3, 100);
    assert.deepEqual(plain, ['b-p-5-past', 'n-p-5-past', 'b-p0-past']);
    assert.deepEqual(global, plain);
    // Round robin: the first due job of each key visited, and of the jobs without a key.
    assert.deepEqual([...keyed].sort(), ['a-p0-now', 'b-p-5-past', 'n-p-5-past']);
  });

  it('a queue of jobs not pending has nothing due and nothing coming due', async () => {
    await insert(SPECS.filter((s) => s.status !== undefined));
    const { plain, global, keyed } = await claimAll(100, 100);
    assert.deepEqual({ plain, global, keyed }, { plain: [], global: [], keyed: [] });
    for (const queue of QUEUES) assert.equal(await nextDueIn(store(), queue, NOW), null, queue);
  });
});
