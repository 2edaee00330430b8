/**
 * Task option exclusiveThread: a job of such a task never shares its worker
 * thread, whatever queue it is in, while other jobs of that queue still share.
 * Each run records its worker threadId and its span; the test checks spans on
 * each thread for overlaps.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { ResolvedTaskOptions } from '../../src/worker/task_options.ts';
import { until } from '../helpers/poll.ts';
import { supervisedFile } from '../helpers/supervised.ts';

/** The options of each kind the supervisor has read (its `task:read` events). */
const read = new Map<string, ResolvedTaskOptions | null>();

interface Span {
  job_id: string;
  kind: string;
  thread_id: number;
  started: number;
  finished: number;
}

const file = supervisedFile(
  'exclusive_thread',
  {
    // A sharing queue: up to 8 jobs at once on one thread.
    queues: { default: { concurrency: 16, jobsPerThread: 8 }, cpu: { concurrency: 2, jobsPerThread: 1 } },
    pool: { maxThreads: 2 },
    jobs: { timeout: '30s' },
  },
  {
    prepare: async (db) => {
      await db.pool.query(
        'CREATE TABLE spans (job_id bigint, kind text, thread_id int, started float8, finished float8)',
      );
    },
    beforeStart: (supervisor) => {
      supervisor.events.on('task:read', ({ kind, options }) => read.set(kind, options));
    },
  },
);

function overlaps(a: Span, b: Span): boolean {
  return a.started < b.finished && b.started < a.finished;
}

describe('exclusiveThread', () => {
  it('never runs an exclusive job beside another job on its thread; other jobs still share', async () => {
    const jobs = [];
    for (let i = 0; i < 6; i++) {
      jobs.push({ kind: 'exclusive_span', queue: 'default', payload: { ms: 250 } });
      jobs.push({ kind: 'shared_span', queue: 'default', payload: { ms: 250 } });
      jobs.push({ kind: 'shared_span', queue: 'default', payload: { ms: 250 } });
    }
    await enqueueMany(file.db.pool, jobs);
    await until(
      'every job done',
      async () =>
        (await file.db.pool.query("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'")).rows[0].n,
      (n) => n === jobs.length,
      60_000,
    );
    const spans = (await file.db.pool.query<Span>('SELECT * FROM spans')).rows;
    assert.equal(spans.length, jobs.length, 'each job ran once');

    let sharedPairs = 0;
    for (const a of spans) {
      for (const b of spans) {
        if (a === b || a.thread_id !== b.thread_id || !overlaps(a, b)) continue;
        assert.ok(
          a.kind !== 'exclusive_span' && b.kind !== 'exclusive_span',
          `job ${a.job_id} (${a.kind}) and job ${b.job_id} (${b.kind}) ran at once on thread ${a.thread_id}`,
        );
        sharedPairs++;
      }
    }
    assert.ok(sharedPairs > 0, 'jobs without the option still share a thread');
  });

  it('reads the built-in tasks options soon after start: thumbnail and daily_report are exclusive', async () => {
    await until(
      'thumbnail and daily_report options read',
      () => [read.get('thumbnail'), read.get('daily_report')],
      (options) => options.every((o) => o?.exclusiveThread === true && o.queue === 'cpu'),
      15_000,
    );
    assert.equal(read.get('shared_span'), null, 'shared_span declares no options');
  });
});
