/**
 * The heartbeat's renewal never waits for a row lock (src/queue/lease.ts).
 * A lease row another writer has locked (this supervisor's completer, a batch
 * call's start, an operator's UPDATE) is reported held and left for the next
 * beat, while every other lease is renewed at once: a renewal that waited
 * deadlocked with writers locking the same rows in another order, and failed
 * rounds let the leases of live runs run out.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue } from '../../src/queue/enqueue.ts';
import { renewLeases } from '../../src/queue/lease.ts';
import type { Store } from '../../src/queue/sql.ts';
import { within } from '../../src/within.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { markRunning } from '../helpers/workflow.ts';

let db: TestDatabase;
let store: Store;

before(async () => {
  db = await createTestDatabase('lease_skip_locked');
  store = { db: db.pool, schema: 'jobvisor' };
});

after(async () => {
  await db.drop();
});

const lockedUntil = async (id: string) =>
  (
    await db.pool.query<{ t: Date }>('SELECT locked_until AS t FROM jobvisor.jobs WHERE id = $1', [id])
  ).rows[0]?.t.getTime() ?? NaN;

/**
 * Renews `fences` while another transaction holds row `locked` FOR UPDATE, and
 * returns what the renewal kept; fails if the renewal waits 5 s (it must not
 * wait for the lock at all). `whileHeld` runs before that transaction ends.
 */
async function renewBesideLock(
  locked: string,
  fences: Array<{ id: string; token: string }>,
  whileHeld: (kept: Set<string>) => Promise<void> = async () => {},
): Promise<Set<string>> {
  const writer = await db.pool.connect();
  try {
    await writer.query('BEGIN');
    await writer.query('SELECT id FROM jobvisor.jobs WHERE id = $1 FOR UPDATE', [locked]);
    const renewal = renewLeases(store, 'sup', fences, 600_000);
    assert.ok(await within(renewal, 5000), 'the renewal still waits after 5000 ms');
    const kept = await renewal;
    await whileHeld(kept);
    await writer.query('COMMIT');
    return kept;
  } finally {
    writer.release();
  }
}

describe('renewing leases beside a row lock', () => {
  it('renews the other leases at once and reports the locked one held, then renews it once free', async () => {
    const a = (await enqueue(db.pool, 'k', {})).id;
    const b = (await enqueue(db.pool, 'k', {})).id;
    await markRunning(db.pool, a, 'sup', '71');
    await markRunning(db.pool, b, 'sup', '72');
    const before = { a: await lockedUntil(a), b: await lockedUntil(b) };

    await renewBesideLock(
      a,
      [
        { id: a, token: '71' },
        { id: b, token: '72' },
      ],
      async (kept) => {
        assert.deepEqual([...kept].sort(), ['71', '72'], 'the locked lease is held, not lost');
        assert.ok((await lockedUntil(b)) > before.b, 'the free lease is renewed');
        assert.equal(await lockedUntil(a), before.a, 'the locked row is left for the next beat');
      },
    );
    const kept = await renewLeases(store, 'sup', [{ id: a, token: '71' }], 600_000);
    assert.deepEqual([...kept], ['71']);
    assert.ok((await lockedUntil(a)) > before.a, 'renewed once the lock is gone');
  });

  it('still reports a lease lost when its claim changed, and a job deleted, beside a locked row', async () => {
    const a = (await enqueue(db.pool, 'k', {})).id;
    const b = (await enqueue(db.pool, 'k', {})).id;
    const c = (await enqueue(db.pool, 'k', {})).id;
    await markRunning(db.pool, a, 'sup', '81');
    await markRunning(db.pool, b, 'other', '82');
    await markRunning(db.pool, c, 'sup', '83');
    await db.pool.query('DELETE FROM jobvisor.jobs WHERE id = $1', [c]);
    const kept = await renewBesideLock(a, [
      { id: a, token: '81' },
      { id: b, token: '82' },
      { id: c, token: '83' },
    ]);
    assert.deepEqual([...kept], ['81'], 'the claim taken by another owner and the deleted job are lost');
  });
});
