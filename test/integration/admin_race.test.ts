/**
 * Bulk actions racing each other while two supervisors claim and run jobs:
 * each pair of retry, cancel, delete and run-now walks the same jobs at once
 * (in batches of 250, so their batches interleave). A trigger records every
 * change an action's connection makes (by application_name), with the row's
 * status just before it. Every change must match the action's own filter at
 * that moment: `delete --failed` deletes only failed rows (never a job that
 * `retry --failed` had just re-queued), `cancel --status pending` never
 * cancels a job a supervisor has just claimed, and every retried job still
 * exists at the end (it ran, or it is waiting).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { cancelJobs, deleteJobs, retryJobs, runJobsNow } from '../../src/queue/admin/index.ts';
import type { BulkResult, BulkTarget, JobStatus } from '../../src/queue/admin/types.ts';
import { report } from '../helpers/chaos/measure.ts';
import { seedDeadLetters } from '../helpers/dashboard.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';

const JOBS = 5000;
const BATCH = 250;
/** The jobs' task: 20 ms each, 5 at a time per queue and supervisor, so re-queued jobs wait a moment for a slot. */
const NAP = { ms: 20 };
const ACTIONS = ['retry', 'cancel', 'delete', 'runNow'] as const;
type ActionName = (typeof ACTIONS)[number];
type Run = (store: { db: pg.Pool; schema: string }, t: BulkTarget, onBatch?: () => void) => Promise<BulkResult>;
const RUN: Record<ActionName, Run> = {
  retry: (s, t, onBatch) => retryJobs(s, t, { batchSize: BATCH, onBatch }),
  cancel: (s, t, onBatch) => cancelJobs(s, t, { batchSize: BATCH, onBatch }),
  delete: (s, t, onBatch) => deleteJobs(s, t, { batchSize: BATCH, onBatch }),
  runNow: (s, t, onBatch) => runJobsNow(s, t, { batchSize: BATCH, onBatch }),
};

let db: TestDatabase;
const pools = new Map<ActionName, pg.Pool>();
const supervisors: Supervisor[] = [];

/** A pair, the jobs it starts from, and each action's status filter. */
interface Race {
  a: ActionName;
  b: ActionName;
  seed: 'failed' | 'future' | 'both';
  status: Partial<Record<ActionName, JobStatus>>;
  /** b starts when a has changed its first batch (b's filter is empty until then). */
  staggered?: boolean;
}

// Each filter names the statuses the other action (or a supervisor's claim) moves jobs out of.
const RACES: Race[] = [
  { a: 'retry', b: 'delete', seed: 'failed', status: { retry: 'failed', delete: 'failed' } },
  { a: 'retry', b: 'cancel', seed: 'failed', status: { retry: 'failed', cancel: 'pending' }, staggered: true },
  { a: 'retry', b: 'runNow', seed: 'both', status: { retry: 'failed' } },
  { a: 'cancel', b: 'delete', seed: 'future', status: { cancel: 'pending', delete: 'pending' } },
  { a: 'cancel', b: 'runNow', seed: 'future', status: { cancel: 'pending' } },
  { a: 'delete', b: 'runNow', seed: 'future', status: { delete: 'pending' } },
];
const QUEUES = Object.fromEntries(RACES.map((_, i) => [`race_${i}`, { concurrency: 5, jobsPerThread: 5 }]));

before(async () => {
  db = await createTestDatabase('admin_race');
  await db.pool.query(`
    CREATE TABLE naps (job_id bigint, attempt int);
    CREATE TABLE changes (id bigint, app text, old_status text, new_status text, was_future boolean);
    CREATE FUNCTION record_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF current_setting('application_name') LIKE 'race-%' THEN
        INSERT INTO changes VALUES (OLD.id, current_setting('application_name'), OLD.status,
          CASE WHEN TG_OP = 'DELETE' THEN 'deleted' ELSE NEW.status END, OLD.run_at > now());
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER record_change AFTER UPDATE OR DELETE ON jobvisor.jobs FOR EACH ROW EXECUTE FUNCTION record_change();`);
  for (const a of ACTIONS) {
    const pool = new pg.Pool({ connectionString: db.url, max: 2, application_name: `race-${a}` });
    pool.on('error', () => {});
    pools.set(a, pool);
  }
  for (let i = 0; i < 2; i++) {
    const s = startSupervisor(db.url, {
      queues: QUEUES,
      pool: { maxThreads: 2 },
      poll: { interval: '200ms' },
    });
    await s.start();
    supervisors.push(s);
  }
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop()));
  await Promise.all([...pools.values()].map((p) => p.end()));
  await db.drop();
});

async function seed(queue: string, kind: Race['seed']): Promise<void> {
  if (kind !== 'future') await seedDeadLetters(db.pool, { kind: 'nap', count: JOBS, queue, payload: NAP });
  if (kind === 'failed') return;
  // Pending, due in an hour (supervisors leave them until run-now makes them due); the
  // newest ids are due first, so claims meet the actions' walk (newest first) at once.
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (queue, kind, payload, run_at)
     SELECT $1, 'nap', $3::jsonb, now() + interval '1 hour' - g * interval '1 ms' FROM generate_series(1, $2::int) g`,
    [queue, JOBS, JSON.stringify(NAP)],
  );
}

describe('bulk actions racing, with two supervisors running', () => {
  for (const [i, race] of RACES.entries()) {
    it(`${race.a} ${race.status[race.a] ?? '(all)'} against ${race.b} ${race.status[race.b] ?? '(all)'}: every change matched its filter`, async () => {
      const queue = `race_${i}`;
      await db.pool.query('DELETE FROM changes');
      await seed(queue, race.seed);
      const target = (a: ActionName): BulkTarget => ({
        filter: { queue, ...(race.status[a] ? { status: race.status[a] } : {}) },
      });
      const started = Date.now();
      const run = (a: ActionName, onBatch?: () => void) =>
        RUN[a]({ db: pools.get(a) as pg.Pool, schema: 'jobvisor' }, target(a), onBatch);
      let second: Promise<BulkResult> | undefined;
      const startSecond = () => (second ??= run(race.b));
      if (!race.staggered) void startSecond();
      const ra = await run(race.a, race.staggered ? () => void startSecond() : undefined);
      const rb = await startSecond();
      const raceMs = Date.now() - started;
      const { rows } = await db.pool.query<{ app: string; old_status: string; new_status: string; n: number }>(
        'SELECT app, old_status, new_status, count(*)::int AS n FROM changes GROUP BY 1, 2, 3 ORDER BY 1, 2, 3',
      );
      const byApp = (a: ActionName) => rows.filter((r) => r.app === `race-${a}`);
      const outside = [race.a, race.b].flatMap((a) => {
        const allowed = race.status[a] ? [race.status[a]] : a === 'runNow' ? ['pending'] : ['pending', 'running'];
        return byApp(a).filter((r) => !allowed.includes(r.old_status as JobStatus));
      });
      const gone = race.a === 'retry' ? await retriedAndGone() : 0;
      report(`admin-race.${race.a}-${race.b}`, {
        jobs: JOBS,
        batch: BATCH,
        raceMs,
        changed: { [race.a]: ra?.changed, [race.b]: rb?.changed },
        changes: rows,
        outsideFilter: outside,
        retriedThenLost: gone,
      });
      assert.deepEqual(outside, [], `changes of rows outside the action's filter at the time of the change`);
      assert.equal(gone, 0, 'retried jobs deleted afterwards');
    });
  }
});

/** Jobs the retry re-queued that no longer exist (a delete took them after the retry). */
async function retriedAndGone(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM changes c
      WHERE c.app = 'race-retry' AND c.new_status = 'pending'
        AND NOT EXISTS (SELECT 1 FROM jobvisor.jobs j WHERE j.id = c.id)`,
  );
  return rows[0]?.n ?? 0;
}
