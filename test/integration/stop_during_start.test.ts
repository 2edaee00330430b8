/**
 * A stop that comes while the supervisor is still starting (a pod deleted
 * during a rollout, Ctrl-C right after `jobvisor start`): stop() waits for the
 * start-up under way and then drains it, so nothing that start-up opens (the
 * LISTEN connection, the heartbeat's connection, the loops) outlives the stop.
 * Before, the drain ran beside the start-up, whose later steps reopened what
 * the drain had closed: the supervisor said it had started after it said it
 * was draining, and the process hung until its shutdown watchdog.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase();
  await enqueueMany(
    db.pool,
    Array.from({ length: 10 }, (_, i) => ({ kind: 'chaos_noop', payload: { i } })),
  );
});

after(() => db.drop());

/** Points of the start-up at which the stop comes: in the same tick as start(), then later. */
const POINTS: Array<[string, () => Promise<void>]> = [
  ['in the same tick as start()', () => Promise.resolve()],
  ['after one turn of the event loop', () => new Promise((resolve) => setImmediate(resolve))],
  ['2 ms in', () => new Promise((resolve) => setTimeout(resolve, 2))],
  ['10 ms in', () => new Promise((resolve) => setTimeout(resolve, 10))],
  ['30 ms in', () => new Promise((resolve) => setTimeout(resolve, 30))],
];

/** Rejects when `p` has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not resolve within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe('a stop during start-up', () => {
  for (const [when, wait] of POINTS)
    it(`stop() ${when}: start() and stop() resolve, no connection, loop or claim outlives them`, async () => {
      const supervisor: Supervisor = startSupervisor(db.url, {
        queues: { default: { concurrency: 2, jobsPerThread: 2 } },
        pool: { maxThreads: 1 },
      });
      const seen: string[] = [];
      for (const name of ['supervisor:started', 'supervisor:draining', 'supervisor:stopped'] as const)
        supervisor.events.on(name, () => seen.push(name));
      const starting = supervisor.start();
      await wait();
      const stopping = supervisor.stop('stop during start-up');
      await within(Promise.all([starting, stopping]), 15_000, 'start() and stop()');

      assert.notEqual(seen.indexOf('supervisor:stopped'), -1, `events: ${seen.join(', ')}`);
      assert.ok(
        !seen.includes('supervisor:started') ||
          seen.indexOf('supervisor:started') < seen.indexOf('supervisor:draining'),
        `no start announced after the drain began: ${seen.join(', ')}`,
      );
      // Every connection of the supervisor closes (they take a moment to leave pg_stat_activity).
      await until(
        'every connection of the stopped supervisor closed',
        async () =>
          (
            await db.pool.query<{ application_name: string }>(
              `SELECT application_name FROM pg_stat_activity
                WHERE datname = current_database() AND application_name LIKE 'jobvisor%'`,
            )
          ).rows.map((r) => r.application_name),
        (names) => names.length === 0,
        5000,
      );
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status <> 'pending' OR attempts > 0`,
      );
      assert.equal(rows[0]?.n, 0, 'no job claimed by a supervisor stopped while it started');
      const row = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobvisor.supervisors');
      assert.equal(row.rows[0]?.n, 0, 'no supervisor row left');
    });
});
