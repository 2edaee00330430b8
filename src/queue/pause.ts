/**
 * Paused queues, stored in `jobvisor.queues` so that the state survives
 * restarts and every replica obeys it. A write fires NOTIFY jobvisor_queues
 * (a trigger, so plain SQL works too); supervisors also re-read the paused set
 * about once a second in case a notification was lost.
 */
import type { Db } from '../db/pool.ts';
import { checkQueue } from '../names.ts';
import { planned, run, type Store } from './sql.ts';

/** Where `jobvisor.queues` lives, as the API's callers name it. */
export interface QueueApiOptions {
  /** Schema of the jobs table; default "jobvisor". */
  schema?: string;
}

const SET_PAUSED = planned(
  'set_paused',
  `
INSERT INTO jobvisor.queues AS q (queue, paused, updated_at) VALUES ($1, $2, now())
ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()
RETURNING q.queue`,
);

/**
 * Pauses `queue` cluster-wide: once this returns, no supervisor starts another of
 * its jobs within about a second (claimed jobs not yet started are handed
 * back); running jobs finish. Idempotent; a queue not yet known may be paused.
 * @throws InputError for a name that is not a queue name.
 */
export async function pauseQueue(db: Db, queue: string, options: QueueApiOptions = {}): Promise<void> {
  checkQueue('queue', queue);
  await run(storeOf(db, options), SET_PAUSED, [queue, true]);
}

/**
 * Resumes `queue`: every supervisor claims from it again at once. Idempotent.
 * @throws InputError for a name that is not a queue name.
 */
export async function resumeQueue(db: Db, queue: string, options: QueueApiOptions = {}): Promise<void> {
  checkQueue('queue', queue);
  await run(storeOf(db, options), SET_PAUSED, [queue, false]);
}

function storeOf(db: Db, options: QueueApiOptions): Store {
  return { db, schema: options.schema ?? 'jobvisor' };
}

// The poll every supervisor runs about once a second: a tiny table, one row per
// queue ever paused, read through its primary key's heap.
const PAUSED_QUEUES = planned('paused_queues', `SELECT queue FROM jobvisor.queues WHERE paused`);

/** The names of the paused queues. */
export async function pausedQueues(store: Store): Promise<Set<string>> {
  return new Set((await run<{ queue: string }>(store, PAUSED_QUEUES, [])).map((r) => r.queue));
}

/** A queue as listQueues() reports it: paused or not, and its pending, running and blocked counts. */
export interface QueueInfo {
  queue: string;
  paused: boolean;
  pending: number;
  running: number;
  /** Workflow jobs waiting for their parents (they become pending when the last one is done). */
  blocked: number;
  /** When it was last paused or resumed (null: never). */
  updatedAt: Date | null;
}

const LIST_QUEUES = planned(
  'list_queues',
  `
WITH counts AS (
  SELECT queue, count(*) FILTER (WHERE s = 'p')::int AS pending, count(*) FILTER (WHERE s = 'r')::int AS running,
         count(*) FILTER (WHERE s = 'b')::int AS blocked
    FROM (SELECT queue, 'p' AS s FROM jobvisor.jobs WHERE status = 'pending'
          UNION ALL
          SELECT queue, 'r' FROM jobvisor.jobs WHERE status = 'running'
          UNION ALL
          SELECT queue, 'b' FROM jobvisor.jobs WHERE status = 'blocked') AS active
   GROUP BY queue
)
SELECT coalesce(q.queue, c.queue) AS queue, coalesce(q.paused, false) AS paused,
       coalesce(c.pending, 0) AS pending, coalesce(c.running, 0) AS running,
       coalesce(c.blocked, 0) AS blocked, q.updated_at
  FROM jobvisor.queues AS q FULL JOIN counts AS c ON c.queue = q.queue
 ORDER BY 1`,
  'throughIndexes',
);

/**
 * Every queue that has pending, running or blocked jobs or was ever paused, with its
 * state. One branch per status, each through its partial index, and through
 * sequential scans priced out (`throughIndexes`): `status IN ('pending', 'running')` matched neither
 * partial index, and on a grown table with stale statistics the count read
 * all of it (a million rows, test/statements.test.ts).
 */
export async function listQueues(db: Db, options: QueueApiOptions = {}): Promise<QueueInfo[]> {
  const rows = await run<{
    queue: string;
    paused: boolean;
    pending: number;
    running: number;
    blocked: number;
    updated_at: Date | null;
  }>(storeOf(db, options), LIST_QUEUES, []);
  return rows.map((r) => ({
    queue: r.queue,
    paused: r.paused,
    pending: r.pending,
    running: r.running,
    blocked: r.blocked,
    updatedAt: r.updated_at,
  }));
}
