/**
 * Fairness across the queues of one supervisor: each queue claims on its own
 * (its fetcher, woken by the insert's NOTIFY), so a queue with a huge backlog
 * never delays the first job of another by more than a claim round. Latency is
 * read from the job's own row: the claim's started_at against the insert's
 * created_at (both the database's clock, the insert committed alone).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { nextEvent, startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('flow_queues');
});
after(async () => {
  await db.drop();
});

const TRIALS = 100;

async function count(sql: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(sql);
  return rows[0]?.n ?? -1;
}

describe('fair across queues', () => {
  // The busy queue's jobs take 2 ms each (10 at once: up to 5,000 a second), so its backlog lasts
  // through the trials; no-op jobs drained 100,000 before the hundredth trial.
  it('100,000 pending jobs in one queue delay the first job of another by at most 50 ms (p99 of 100)', async () => {
    await db.pool.query(
      `INSERT INTO jobvisor.jobs (kind, queue, payload)
       SELECT 'pause_ms', 'bulk', '{"ms": 2}' FROM generate_series(1, 100000)`,
    );
    const supervisor = startSupervisor(db.url, {
      queues: { bulk: { concurrency: 10 }, lone: { concurrency: 1 } },
      pool: { maxThreads: 2 },
    });
    await supervisor.start();
    try {
      await until(
        'the bulk queue running',
        () => count(`SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'bulk' AND status = 'done'`),
        (n) => n >= 1000,
        60_000,
      );
      for (let i = 0; i < TRIALS; i++) {
        const done = nextEvent(supervisor, 'job:completed', (e) => e.jobs.some((j) => j.queue === 'lone'));
        await db.pool.query(`INSERT INTO jobvisor.jobs (kind, queue, payload) VALUES ('chaos_noop', 'lone', '{}')`);
        await done;
      }
      const pending = await count(
        `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = 'bulk' AND status = 'pending'`,
      );
      assert.ok(pending > 0, 'the bulk queue still had a backlog after the last trial');
    } finally {
      await supervisor.stop();
    }
    const { rows } = await db.pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM started_at - created_at)::float8 * 1000 AS ms
         FROM jobvisor.jobs WHERE queue = 'lone' ORDER BY ms`,
    );
    assert.equal(rows.length, TRIALS);
    const p99 = rows[Math.ceil(TRIALS * 0.99) - 1]?.ms ?? Infinity;
    const p50 = rows[Math.floor(TRIALS / 2)]?.ms ?? Infinity;
    process.stdout.write(`# lone queue start after insert: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms\n`);
    assert.ok(p99 <= 50, `p99 ${p99.toFixed(1)} ms (p50 ${p50.toFixed(1)} ms) from insert to claim`);
  });
});
