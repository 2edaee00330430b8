/**
 * Task options are read a kind at a time: a job waits for its own task's
 * module to be imported (to learn, say, that it is exclusive), never for the
 * other tasks' modules. Before, the supervisor imported every task module
 * before placing its first job, so one slow import (sharp, a PDF library)
 * delayed every job of a new pod. The module is imported in a thread, never on
 * the supervisor's main thread.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;
let supervisor: Supervisor;
let work: string;
let gate: string;
const openGate = () => writeFileSync(gate, '');

before(async () => {
  db = await createTestDatabase('task_catalog');
  await db.pool.query('CREATE TABLE spans (job_id bigint, kind text, thread_id int, started float8, finished float8)');
  work = mkdtempSync(path.join(tmpdir(), 'jobvisor-gate-'));
  gate = path.join(work, 'open');
  // Threads copy the environment when they start: set before the supervisor exists.
  process.env.JOBVISOR_TEST_IMPORT_GATE = gate;
  supervisor = startSupervisor(db.url, { queues: { default: { concurrency: 4 } }, pool: { maxThreads: 2 } });
  await supervisor.start();
});

after(async () => {
  if (gate) openGate();
  await supervisor?.stop();
  await db?.drop();
  delete process.env.JOBVISOR_TEST_IMPORT_GATE;
  if (work) rmSync(work, { recursive: true, force: true });
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
      () => statusOf(shared!.id),
      (s) => s === 'done',
      15_000,
    );
    // Claimed but not run: its task (which returns at once when run) has
    // options that are not known yet.
    assert.equal(await statusOf(gated!.id), 'running');

    openGate();
    await until(
      'the gated job done',
      () => statusOf(gated!.id),
      (s) => s === 'done',
      15_000,
    );
    // Read for its options, then run: imported twice, never on the supervisor's main
    // thread (a heavy module's top level would block leases and probes there).
    assert.deepEqual(readFileSync(`${gate}.imports`, 'utf8').split('\n').filter(Boolean), ['thread', 'thread']);
  });
});
