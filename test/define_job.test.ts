/** defineJob: a declaration of a kind, its payload type and its defaults. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InputError } from '../src/errors.ts';
import { defineJob } from '../src/queue/define_job.ts';
import { enqueue, enqueueMany } from '../src/queue/enqueue.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('define_job');
});

after(async () => {
  await db.drop();
});

async function jobsOf(ids: string[]): Promise<Array<{ queue: string; priority: number; max_attempts: number }>> {
  const { rows } = await db.pool.query(
    'SELECT queue, priority, max_attempts FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY array_position($1, id)',
    [ids],
  );
  return rows;
}

describe('defineJob', () => {
  it('refuses a bad declaration at once, naming it', () => {
    assert.throws(
      () => defineJob('bad kind'),
      (e: Error) => e instanceof InputError && /defineJob: kind "bad kind"/.test(e.message),
    );
    assert.throws(() => defineJob('k', { queue: 'a.b' }), /defineJob: queue "a\.b" is not valid/);
    assert.throws(() => defineJob('k', { priority: 1.5 }), /defineJob: priority must be an integer/);
    assert.throws(() => defineJob('k', { maxAttempts: 0 }), /defineJob: maxAttempts must be an integer from 1 to 1000/);
    assert.throws(() => defineJob('k', { queu: 'mail' } as never), /unknown option "queu" \(did you mean "queue"\?\)/);
    assert.throws(() => defineJob('k', null as never), /defaults must be an object/);
    const handle = defineJob<{ n: number }>('k', { queue: 'mail' });
    assert.ok(Object.isFrozen(handle) && Object.isFrozen(handle.options));
    assert.deepEqual({ kind: handle.kind, options: handle.options }, { kind: 'k', options: { queue: 'mail' } });
  });

  it('gives its defaults to enqueue and to job(); what the call names wins', async () => {
    const invoice = defineJob<{ invoiceId: number }>('send_invoice', { queue: 'mail', priority: -3, maxAttempts: 4 });
    const a = await enqueue(db.pool, invoice, { invoiceId: 1 });
    const b = await enqueue(db.pool, invoice, { invoiceId: 2 }, { queue: 'urgent', priority: undefined });
    const [c, d] = await enqueueMany(db.pool, [
      invoice.job({ invoiceId: 3 }),
      invoice.job({ invoiceId: 4 }, { maxAttempts: 9 }),
    ]);
    assert.deepEqual(await jobsOf([a.id, b.id, c?.id as string, d?.id as string]), [
      { queue: 'mail', priority: -3, max_attempts: 4 },
      { queue: 'urgent', priority: -3, max_attempts: 4 },
      { queue: 'mail', priority: -3, max_attempts: 4 },
      { queue: 'mail', priority: -3, max_attempts: 9 },
    ]);
    const { rows } = await db.pool.query('SELECT kind, payload FROM jobvisor.jobs WHERE id = $1', [d?.id]);
    assert.deepEqual(rows[0], { kind: 'send_invoice', payload: { invoiceId: 4 } });
    await assert.rejects(enqueue(db.pool, invoice, { invoiceId: 5 }, { queue: 'a b' }), /queue "a b" is not valid/);
  });
});
