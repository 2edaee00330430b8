/**
 * Slots handed on before the outcome's write, against a real PostgreSQL: a
 * claim that passes its own ended runs (still `running`, task over) may give
 * their slots to new jobs; another supervisor, a stale claim token or a run
 * passed by a claim that took nothing lends nothing; a run passed again
 * after its slot went to a new job lends nothing more, whatever the limit;
 * and which runs a queue limited per key alone stops passing (spentSlots).
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { claimLimited } from '../../src/queue/claim_limited.ts';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { spentSlots } from '../../src/supervisor/claim/transfers.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('flow_lent_slots');
});
after(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE jobvisor.jobs, jobvisor.rate_starts');
});

async function add(n: number, key?: string): Promise<void> {
  const jobs: JobSpec[] = [];
  for (let i = 0; i < n; i++) jobs.push({ kind: 'k', queue: 'q', payload: { i }, concurrencyKey: key });
  await enqueueMany(db.pool, jobs);
}

function claim(
  limits: { globalConcurrency?: number; perKeyConcurrency?: number },
  owner: string,
  ended: Array<{ id: string; token: string }> = [],
) {
  const store = { db: db.pool, schema: 'jobvisor' };
  return claimLimited(store, {
    owner,
    queue: 'q',
    limit: 10,
    leaseMs: 60_000,
    maxPayloadBytes: 1 << 20,
    limits,
    ended,
  });
}

describe('ended runs lend their slots', () => {
  it('globalConcurrency 1: the owner of an ended run gets its slot; nobody else does, nor a stale token', async () => {
    await add(3);
    const first = await claim({ globalConcurrency: 1 }, 'a');
    assert.equal(first.jobs.length, 1);
    const run = { id: first.jobs[0]!.id, token: first.jobs[0]!.token };
    assert.equal((await claim({ globalConcurrency: 1 }, 'a')).jobs.length, 0, 'the slot is held while the row runs');
    assert.equal((await claim({ globalConcurrency: 1 }, 'b', [run])).jobs.length, 0, 'another owner lends nothing');
    const stale = { id: run.id, token: String(BigInt(run.token) + 1000n) };
    assert.equal((await claim({ globalConcurrency: 1 }, 'a', [stale])).jobs.length, 0, 'a stale token lends nothing');
    const lent = await claim({ globalConcurrency: 1 }, 'a', [run]);
    assert.equal(lent.jobs.length, 1, 'the ended run lends its slot');
    assert.deepEqual(
      lent.ended.map((e) => e.token),
      [run.token],
      'the claim reports the run it found',
    );
    assert.deepEqual(
      spentSlots({ globalConcurrency: true, perKeyConcurrency: false, found: lent.ended, claimedKeys: lent.keys }),
      [],
      'under globalConcurrency the run is passed again until its outcome is written',
    );
    const again = await claim({ globalConcurrency: 1 }, 'a', [run]);
    assert.equal(again.jobs.length, 0, 'passed again, it lends nothing more: the job that took its slot is counted');
    assert.deepEqual(
      again.ended.map((e) => e.token),
      [run.token],
    );
    const next = { id: lent.jobs[0]!.id, token: lent.jobs[0]!.token };
    assert.equal((await claim({ globalConcurrency: 1 }, 'a', [run, next])).jobs.length, 1, 'once that job ends too');
  });

  it('globalConcurrency 3 over two owners: runs passed to every claim never let more than 3 run', async () => {
    await add(30);
    type Run = { id: string; token: string };
    const runs = (): { running: Run[]; ended: Run[] } => ({ running: [], ended: [] });
    const owners = new Map([
      ['a', runs()],
      ['b', runs()],
    ]);
    let claimed = 0;
    // Before each claim its owner's oldest run ends; no outcome is ever written, so every row
    // stays `running` and a slot frees only through the runs passed, each to every later claim.
    for (let round = 0; round < 8; round++)
      for (const [owner, mine] of owners) {
        const first = mine.running.shift();
        if (first) mine.ended.push(first);
        const got = await claim({ globalConcurrency: 3 }, owner, mine.ended);
        claimed += got.jobs.length;
        mine.running.push(...got.jobs.map((j) => ({ id: j.id, token: j.token })));
        const live = owners.get('a')!.running.length + owners.get('b')!.running.length;
        assert.ok(live <= 3, `${live} runs not ended hold slots after round ${round} of ${owner}`);
      }
    assert.ok(claimed >= 8, `slots were lent on and on (${claimed} claimed)`);
  });

  it('perKeyConcurrency 1: an ended run lends its key slot to a job of its key', async () => {
    await add(2, 'k1');
    const first = await claim({ perKeyConcurrency: 1 }, 'a');
    assert.equal(first.jobs.length, 1);
    assert.equal((await claim({ perKeyConcurrency: 1 }, 'a')).jobs.length, 0);
    const run = { id: first.jobs[0]!.id, token: first.jobs[0]!.token };
    const lent = await claim({ perKeyConcurrency: 1 }, 'a', [run]);
    assert.equal(lent.jobs.length, 1);
    assert.deepEqual(lent.keys, ['k1']);
    assert.deepEqual(
      spentSlots({ globalConcurrency: false, perKeyConcurrency: true, found: lent.ended, claimedKeys: lent.keys }),
      [run.token],
    );
  });

  it('spentSlots: per key alone, at least what a claim may have used; otherwise none', () => {
    const found = [
      { token: '1', key: 'a' },
      { token: '2', key: 'b' },
      { token: '3', key: 'a' },
    ];
    const spent = (g: boolean, k: boolean, claimedKeys: Array<string | null>) =>
      spentSlots({ globalConcurrency: g, perKeyConcurrency: k, found, claimedKeys });
    assert.deepEqual(spent(false, true, ['a', 'c']), ['1'], 'per key alone: a run of each key that took a job');
    assert.deepEqual(spent(false, true, ['a', 'a', 'b']), ['1', '2', '3']);
    assert.deepEqual(spent(true, false, ['x']), [], 'under globalConcurrency every run is passed again');
    assert.deepEqual(spent(true, true, ['a']), [], 'with both limits too');
    assert.deepEqual(spent(false, false, ['a']), [], 'a rate limit counts no slots');
    assert.deepEqual(spent(false, true, []), [], 'a claim that took nothing spent nothing');
  });
});
