/**
 * defineJob and where a job's queue comes from: the call's options, else the
 * handle the caller imports, else "default". Never from what a supervisor in
 * the same process happened to read: the same enqueue() call gives the same
 * queue in a web process and in a worker.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InputError } from '../../src/errors.ts';
import { defineJob } from '../../src/queue/define_job.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { nextEvent, startSupervisor } from '../helpers/inprocess.ts';

let db: TestDatabase;
let dir: string;
let supervisor: Supervisor | undefined;

before(async () => {
  db = await createTestDatabase('define_job');
  dir = await mkdtemp(path.join(tmpdir(), 'jobvisor-define-job-'));
  // A task that asks for its own queue, which the supervisor below serves.
  await writeFile(
    path.join(dir, 'resize.mjs'),
    "export const options = { queue: 'images' };\nexport default () => {};\n",
  );
});

after(async () => {
  await supervisor?.stop();
  await rm(dir, { recursive: true, force: true });
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

describe("a job's queue", () => {
  it('is the same with and without a supervisor in the process that enqueues', async () => {
    const images = defineJob('resize', { queue: 'images' });
    const enqueueBoth = async () => {
      const byName = await enqueue(db.pool, 'resize', {});
      const byHandle = await enqueue(db.pool, images, {});
      return (await jobsOf([byName.id, byHandle.id])).map((j) => j.queue);
    };
    // A web process: no supervisor, no task read.
    const without = await enqueueBoth();
    // A worker: its supervisor serves "images" and has read the task that asks for it.
    supervisor = startSupervisor(db.url, {
      tasks: { dir },
      queues: { default: { concurrency: 1 }, images: { concurrency: 1 } },
    });
    const read = nextEvent(supervisor, 'task:read', ({ kind }) => kind === 'resize');
    await supervisor.start();
    await supervisor.readTasks(['resize']);
    const [{ options }] = await read;
    assert.equal(options?.queue, 'images', 'the supervisor read the task options');
    const withSupervisor = await enqueueBoth();
    assert.deepEqual(without, ['default', 'images']);
    assert.deepEqual(withSupervisor, without);
  });
});
