/**
 * Cleanup keeps its plan without fresh statistics: 500,000 expired done rows
 * arrive in one statement on a table never analyzed (autovacuum off, so it
 * stays that way), and a supervisor with `cleanup.interval` 2s deletes them
 * all. The plan is the ordered walk of jobs_finished_idx; the time it took is
 * reported, and bounded only generously (correctness, not speed: the speed is
 * measured by `jobvisor bench --scenario sustained`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { statements } from '../../src/queue/sql.ts';
import '../../src/queue/cleanup.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { describeNode, explainPlan, planNodes } from '../helpers/explain.ts';
import { startSupervisor } from '../helpers/inprocess.ts';

const BACKLOG = 500_000;
let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('cleanup_backlog');
  await db.pool.query('ALTER TABLE jobvisor.jobs SET (autovacuum_enabled = off)');
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (kind, queue, status, finished_at, started_at)
     SELECT 'k' || (i % 10), 'q' || (i % 3), 'done', now() - interval '1 hour' - i * interval '1 millisecond',
            now() - interval '2 hours'
       FROM generate_series(1, ${BACKLOG}) AS i`,
  );
});

after(async () => {
  await db?.drop();
});

describe('a backlog of 500,000 expired rows on a table never analyzed', () => {
  it('is deleted by walking jobs_finished_idx in order', async () => {
    const recorded = statements.get('delete_finished');
    assert.ok(recorded, 'delete_finished is defined');
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      if (recorded.settings) await client.query(recorded.settings);
      const plan = await explainPlan(client, recorded.text, [60_000, 30 * 86_400_000, 1000, null]);
      const nodes = planNodes(plan).map(describeNode);
      assert.ok(nodes.includes('Index Scan using jobs_finished_idx on jobs'), nodes.join('\n'));
      assert.ok(!nodes.some((n) => /^(Sort|Seq Scan|Bitmap)/.test(n)), nodes.join('\n'));
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it('is gone soon after a supervisor with cleanup.interval 2s starts', async (t) => {
    const supervisor = startSupervisor(db.url, {
      cleanup: { interval: '2s', retention: '1m' },
      queues: { default: { concurrency: 1 } },
    });
    let deleted = 0;
    let rounds = 0;
    const gone = new Promise<number>((resolve) => {
      supervisor.events.on('jobs:cleaned', ({ rows }) => {
        rounds++;
        deleted += rows.reduce((n, r) => n + r.count, 0);
        if (deleted >= BACKLOG) resolve(performance.now());
      });
    });
    const started = performance.now();
    await supervisor.start();
    try {
      const end = await Promise.race([
        gone,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`only ${deleted} of ${BACKLOG} deleted after 120 s`)), 120_000).unref(),
        ),
      ]);
      const seconds = (end - started) / 1000;
      t.diagnostic(
        `${BACKLOG} rows deleted ${seconds.toFixed(1)} s after the supervisor's start (${rounds} batches reported)`,
      );
    } finally {
      await supervisor.stop();
    }
    const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobvisor.jobs`);
    assert.equal(rows[0]?.n, 0);
    assert.equal(deleted, BACKLOG);
  });
});
