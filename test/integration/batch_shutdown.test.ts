/**
 * Shutdown with a batch gathering: the supervisor calls it at once (no waiting
 * for its maxWait of 3 s) and its jobs end done, in one call. The call's fill
 * wait (claim to call, batch:called) shows it did not wait; stop's own time
 * includes booting the thread, which a loaded machine makes long.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { nextEvent } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'batch_shutdown',
  {
    queues: { default: { concurrency: 20, jobsPerThread: 10 } },
    jobs: { timeout: '30s', lease: '5m' },
    pool: { maxThreads: 1 },
  },
  {
    prepare: async (db) => {
      await db.pool.query(`
      CREATE TABLE batch_calls (call serial, kind text, ids bigint[], key text, at timestamptz DEFAULT clock_timestamp());
      CREATE TABLE batch_release (name text);`);
    },
  },
);

describe('batch tasks at shutdown', () => {
  it('calls a gathering batch at once instead of waiting for maxWait', async () => {
    const read = nextEvent(file.supervisor, 'task:read', ({ kind }) => kind === 'batch_slow', 30_000);
    const ids = (
      await enqueueMany(
        file.db.pool,
        [0, 1, 2].map((n) => ({ kind: 'batch_slow', payload: { n } })),
      )
    ).map((r) => r.id);
    await read;
    await until(
      'all three claimed',
      async () =>
        (await file.db.pool.query("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'running'")).rows[0].n,
      (n) => n === 3,
    );
    const called = nextEvent(file.supervisor, 'batch:called', ({ kind }) => kind === 'batch_slow', 30_000);
    await file.supervisor.stop();
    const [{ size, fillMs }] = await called;
    const { rows } = await file.db.pool.query<{ status: string }>(
      'SELECT status FROM jobvisor.jobs WHERE id = ANY($1::bigint[])',
      [ids],
    );
    assert.deepEqual(
      rows.map((r) => r.status),
      ['done', 'done', 'done'],
    );
    const calls = await file.db.pool.query('SELECT ids FROM batch_calls WHERE ids && $1::bigint[]', [ids]);
    assert.equal(calls.rows.length, 1, 'one call');
    assert.equal(size, 3);
    assert.ok(fillMs < 3_000, `called at stop, before its maxWait of 3 s: after ${Math.round(fillMs)} ms`);
  });
});
