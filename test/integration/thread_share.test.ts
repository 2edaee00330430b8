/**
 * Queues sharing pool.maxThreads do not starve one another: with one thread and
 * a default queue that always has work buffered (prefetch), a cpu job still gets
 * the thread long before default's backlog is done.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

const file = supervisedFile(
  'thread_share',
  {
    queues: {
      default: { concurrency: 4, jobsPerThread: 4, prefetch: 8 },
      cpu: { concurrency: 1, jobsPerThread: 1 },
    },
    pool: { maxThreads: 1 },
    jobs: { timeout: '30s' },
  },
  {
    prepare: async (db) => {
      await db.pool.query(
        'CREATE TABLE spans (job_id bigint, kind text, thread_id int, started float8, finished float8)',
      );
    },
  },
);

describe('queues sharing threads', () => {
  it('a busy queue gives a thread back to a queue that has none', async () => {
    const backlog = Array.from({ length: 40 }, () => ({ kind: 'shared_span', queue: 'default', payload: { ms: 200 } }));
    await enqueueMany(file.db.pool, backlog);
    await until(
      'default under way',
      async () => (await file.db.pool.query('SELECT count(*)::int AS n FROM spans')).rows[0].n as number,
      (n) => n >= 1,
      30_000,
    );
    const cpu = await enqueue(file.db.pool, 'shared_span', { ms: 10 }, { queue: 'cpu' });
    const spans = await until(
      'every job recorded',
      async () => (await file.db.pool.query('SELECT job_id::text, started FROM spans ORDER BY started')).rows,
      (rows) => rows.length >= backlog.length + 1,
      60_000,
    );
    // A task records its span before its outcome is written: wait for the outcomes too.
    await until(
      'every outcome written',
      async () =>
        (
          await file.db.pool.query(
            "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status IN ('pending', 'running')",
          )
        ).rows[0].n as number,
      (n) => n === 0,
      30_000,
    );
    const odd = await file.db.pool.query(
      "SELECT id, status, attempts, last_error FROM jobvisor.jobs WHERE attempts > 1 OR status <> 'done' LIMIT 5",
    );
    assert.deepEqual(odd.rows, [], 'every job ran once and is done');
    const position = spans.findIndex((r) => r.job_id === cpu.id);
    // Without sharing, the cpu job would wait for all 40 default jobs.
    assert.ok(position < backlog.length - 8, `the cpu job started after ${position} of ${backlog.length} default jobs`);
  });
});
