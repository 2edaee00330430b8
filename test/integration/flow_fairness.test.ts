/**
 * Fairness between concurrency keys (tenants) of one limited queue, through a
 * real supervisor: a tenant with a huge backlog does not starve one with a
 * few jobs, and keyWeights split the starts of backlogged keys by weight.
 * Starts are read from the jobs' own rows (started_at, set by the claim).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('flow_fairness');
});
after(async () => {
  await db.drop();
});

/** `n` no-op jobs of `queue` with concurrency key `key`, in one statement. */
async function insert(queue: string, key: string, n: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (kind, queue, payload, concurrency_key)
     SELECT 'chaos_noop', $1, '{}', $2 FROM generate_series(1, $3::int)`,
    [queue, key, n],
  );
}

async function started(queue: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue = $1 AND started_at IS NOT NULL`,
    [queue],
  );
  return rows[0]?.n ?? 0;
}

async function withSupervisor(queues: Record<string, unknown>, run: () => Promise<void>): Promise<void> {
  const supervisor: Supervisor = startSupervisor(db.url, { queues, pool: { maxThreads: 1 } });
  await supervisor.start();
  try {
    await run();
  } finally {
    await supervisor.stop();
  }
}

describe('fair shares between the keys of a limited queue', () => {
  it("a tenant's 10,000 pending jobs, enqueued first, do not starve another tenant's 10", async () => {
    const queue = 'starve';
    await insert(queue, 'tenant:a', 10_000);
    await insert(queue, 'tenant:b', 10);
    const limits = { concurrency: 8, jobsPerThread: 8, globalConcurrency: 4, perKeyConcurrency: 4 };
    await withSupervisor({ [queue]: limits }, async () => {
      await until(
        "tenant b's 10 jobs started",
        async () =>
          (
            await db.pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM jobvisor.jobs
                WHERE queue = $1 AND concurrency_key = 'tenant:b' AND started_at IS NOT NULL`,
              [queue],
            )
          ).rows[0]?.n,
        (n) => n === 10,
        120_000,
      );
    });
    // How many of a's jobs started before b's last one: with equal shares, about 10.
    const { rows } = await db.pool.query<{ before: number }>(
      `SELECT count(*)::int AS before FROM jobvisor.jobs
        WHERE queue = $1 AND concurrency_key = 'tenant:a'
          AND started_at < (SELECT max(started_at) FROM jobvisor.jobs WHERE queue = $1 AND concurrency_key = 'tenant:b')`,
      [queue],
    );
    const before = rows[0]?.before ?? -1;
    assert.ok(before <= 40, `${before} of tenant a's jobs started before tenant b's 10th (equal shares: about 10)`);
  });

  it('keyWeights: keys of weight 3 and 1, both backlogged, share 4 slots 3:1 (±10 %) over 4,000 starts', async () => {
    const queue = 'weighted';
    // Enqueued in turns, so claim order alone would favour neither.
    for (let i = 0; i < 4; i++) {
      await insert(queue, 'tenant:b', 1000);
      await insert(queue, 'tenant:a', 1000);
    }
    const limits = {
      concurrency: 8,
      jobsPerThread: 8,
      globalConcurrency: 4,
      perKeyConcurrency: 4,
      keyWeights: { 'tenant:a': 3 },
    };
    const starts = 4000;
    await withSupervisor({ [queue]: limits }, async () => {
      await until(
        `${starts} starts`,
        () => started(queue),
        (n) => n >= starts,
        240_000,
        100,
      );
    });
    const { rows } = await db.pool.query<{ b: number }>(
      `SELECT count(*) FILTER (WHERE concurrency_key = 'tenant:b')::int AS b
         FROM (SELECT concurrency_key FROM jobvisor.jobs WHERE queue = $1 AND started_at IS NOT NULL
                ORDER BY started_at, id LIMIT $2) AS first`,
      [queue, starts],
    );
    const b = rows[0]?.b ?? -1;
    assert.ok(
      b >= 900 && b <= 1100,
      `tenant b (weight 1) had ${b} of the first ${starts} starts, expected 1,000 ± 100`,
    );
  });
});
