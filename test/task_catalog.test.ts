/**
 * Task options are read a kind at a time: a job waits for its own task's
 * module to be imported (to learn, say, that it is exclusive), never for the
 * other tasks' modules. Before, the supervisor imported every task module
 * before placing its first job, so one slow import (sharp, a PDF library)
 * delayed every job of a new pod.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../src/queue/enqueue.ts';
import type { Supervisor } from '../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { startSupervisor } from './helpers/inprocess.ts';
import { until } from './helpers/poll.ts';

declare global {
  var jobvisorTestImportGate: Promise<void> | undefined;
}

let db: TestDatabase;
let supervisor: Supervisor;
let openGate: () => void = () => {};

before(async () => {
  db = await createTestDatabase('task_catalog');
  await db.pool.query('CREATE TABLE spans (job_id bigint, kind text, thread_id int, started float8, finished float8)');
  globalThis.jobvisorTestImportGate = new Promise<void>((resolve) => (openGate = resolve));
  supervisor = startSupervisor(db.url, { queues: { default: { concurrency: 4 } }, pool: { maxThreads: 2 } });
  await supervisor.start();
});

after(async () => {
  openGate();
  await supervisor?.stop();
  await db?.drop();
  delete globalThis.jobvisorTestImportGate;
});

async function statusOf(id: string): Promise<string> {
  const { rows } = await db.pool.query<{ status: string }>('SELECT status FROM jobvisor.jobs WHERE id = $1', [id]);
  return rows[0]?.status ?? 'missing';
}

describe('task options, a kind at a time', () => {
  it('runs other kinds while one task module is still importing; that kind waits for its options', async () => {
    const [gated, shared] = await enqueueMany(db.pool, [
      { kind: 'gated_import', payload: {} },
      { kind: 'shared_span', payload: { ms: 1 } },
    ]);
    await until(
      'the shared_span job done',
      () => statusOf(shared!.id as string),
      (s) => s === 'done',
      15_000,
    );
    // Claimed but not run: its task (which returns at once when run) has
    // options that are not known yet.
    assert.equal(await statusOf(gated!.id as string), 'running');

    openGate();
    await until(
      'the gated job done',
      () => statusOf(gated!.id as string),
      (s) => s === 'done',
      15_000,
    );
  });
});
