/**
 * Scenario "pickup": an idle supervisor; jobs inserted one at a time with a
 * plain SQL INSERT; latency from the INSERT's commit returning to the task
 * starting in a worker thread (reported by the task over a BroadcastChannel).
 */
import { BroadcastChannel } from 'node:worker_threads';
import { withClient } from '../db/borrow.ts';
import type { BenchDatabase } from './database.ts';
import { BENCH_QUEUE, inProcessSupervisor, type QueueShape } from './harness.ts';
import { rowsOnItsOwn, shapeArgs } from './own_process.ts';
import { quantile } from './stats.ts';

/**
 * jobvisor's round of pickup: in this process, or (beside the peers, given
 * `serverUrl`) in a process of its own, whose two rows carry p50 and p99.
 */
export async function pickupRound(
  fresh: <T>(label: string, fn: (db: BenchDatabase) => Promise<T>) => Promise<T>,
  samples: number,
  shape: QueueShape,
  serverUrl?: string,
): Promise<{ p50Ms: number; p99Ms: number }> {
  if (serverUrl === undefined) return fresh('pickup', (db) => pickup(db, samples, shape));
  const args = ['--scenario', 'pickup', '--samples', String(samples), ...shapeArgs(shape)];
  const rows = await rowsOnItsOwn(serverUrl, args, 'jobvisor');
  const of = (scenario: string) => rows.find((r) => r.scenario === scenario)?.median ?? Number.NaN;
  return { p50Ms: of('pickup p50'), p99Ms: of('pickup p99') };
}

export async function pickup(
  db: BenchDatabase,
  samples: number,
  shape: QueueShape,
): Promise<{ p50Ms: number; p99Ms: number; samples: number }> {
  const { supervisor } = inProcessSupervisor(db.url, { ...shape, prefetch: 0 });
  const channel = new BroadcastChannel('jobvisor-bench-pickup');
  const started = new Map<string, (at: number) => void>();
  channel.onmessage = (event) => {
    const { id, at } = (event as MessageEvent).data as { id: string; at: number };
    started.get(id)?.(at);
  };
  await supervisor.start();
  const latencies: number[] = [];
  try {
    for (let i = 0; i < samples + 20; i++) {
      await withClient(db.pool, async (client) => {
        await client.query('BEGIN');
        const id = (
          await client.query<{ id: string }>(
            "INSERT INTO jobvisor.jobs (queue, kind) VALUES ($1, 'bench_pickup') RETURNING id",
            [BENCH_QUEUE],
          )
        ).rows[0]!.id;
        const startedAt = new Promise<number>((resolve) => started.set(id, resolve));
        await client.query('COMMIT');
        const committed = performance.timeOrigin + performance.now();
        const at = await withTimeout(startedAt, 10_000);
        if (i >= 20) latencies.push(Math.max(0, at - committed)); // the first 20 warm up
      });
      // Idle between samples, as a queue that is not busy would be.
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    channel.close();
    await supervisor.stop();
  }
  return { p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), samples: latencies.length };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error('pickup timed out')), ms).unref()),
  ]);
}
