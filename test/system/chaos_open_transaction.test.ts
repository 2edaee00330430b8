/**
 * Chaos: an application enqueues a child of a running job inside its own
 * transaction and keeps that transaction open for three leases (a slow
 * request, an interactive session), with two supervisors as real processes
 * running long jobs. The enqueue used to lock the parent's row until the
 * application committed: the heartbeat of the parent's supervisor (one UPDATE
 * for all its leases) waited on it, every lease of that supervisor ran out,
 * and the other supervisor's reaper started all of its jobs again while they
 * still ran; a pending parent named the same way could not be claimed.
 *
 * Measured, during the hold: the least lease time left on any running job
 * (sampled every 100 ms) and whether the pending parent started; after it:
 * the runs of every job (counted from inside the task), errors mentioning an
 * expired lease, and each child's start against its parent's finish.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { count, report, until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';
import { WF_TABLES } from '../helpers/workflow.ts';

const LEASE_MS = 3000;
const HOLD_MS = 3 * LEASE_MS;
const LONG = 12;

let db: TestDatabase;
const supervisors: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('chaos_open_transaction');
  await db.pool.query(WF_TABLES);
  for (let i = 0; i < 2; i++)
    supervisors.push(
      await spawnSupervisor({
        databaseUrl: db.url,
        tasksDir: FIXTURE_TASKS,
        config: {
          pool: { maxThreads: 1, dbPoolSize: 4 },
          queues: { default: { concurrency: 20, jobsPerThread: 20 } },
          jobs: { lease: `${LEASE_MS}ms`, maxAttempts: 5 },
          reaper: { interval: '250ms' },
          poll: { interval: '500ms' },
        },
        readyTimeoutMs: 60_000,
      }),
    );
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop('SIGKILL').catch(() => {})));
  await db?.drop();
});

const ids = (rows: Array<{ id: string | null }>) => rows.map((r) => r.id as string);
const statusCount = (jobs: string[], status: string) =>
  count(db.pool, 'SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND status = $2', [
    jobs,
    status,
  ]);

/** Holds `app`'s open transaction for HOLD_MS, sampling the least lease time left and whether `pending` started. */
async function hold(running: string[], pending: string | null) {
  const start = performance.now();
  let leastLeftMs = Number.POSITIVE_INFINITY;
  let pendingStarted = false;
  await until(
    'three leases with the transaction open',
    async () => {
      const { rows } = await db.pool.query<{ left: number | null; started: boolean }>(
        `SELECT (SELECT min(extract(epoch FROM locked_until - clock_timestamp()) * 1000)::float8
                   FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND status = 'running') AS left,
                EXISTS (SELECT 1 FROM wf_runs WHERE job_id = $2) AS started`,
        [running, pending],
      );
      const r = rows[0];
      if (r?.left !== null && r?.left !== undefined) leastLeftMs = Math.min(leastLeftMs, r.left);
      if (r?.started) pendingStarted = true;
      return performance.now() - start;
    },
    (elapsed) => elapsed >= HOLD_MS,
    HOLD_MS + 10_000,
    100,
  );
  return { leastLeftMs: Math.round(leastLeftMs), pendingStarted };
}

/** Runs per job (from inside the task), and errors that mention an expired lease. */
async function verdict(jobs: string[]) {
  const { rows } = await db.pool.query<{ runs: number; n: number }>(
    `SELECT runs, count(*)::int AS n FROM (
       SELECT c.id, count(r.run)::int AS runs FROM unnest($1::bigint[]) AS c(id)
         LEFT JOIN wf_runs r ON r.job_id = c.id GROUP BY c.id) x
     GROUP BY runs ORDER BY runs`,
    [jobs],
  );
  const expired = await count(
    db.pool,
    "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND errors::text LIKE '%lease expired%'",
    [jobs],
  );
  return { runs: Object.fromEntries(rows.map((r) => [r.runs, r.n])), leaseExpired: expired };
}

/** ms from the parent's finish to the child's start (negative: the child ran early), and what it saw. */
async function childAfterParent(child: string, parent: string) {
  const { rows } = await db.pool.query<{ gap: number; parents: { n: number; notDone: number } }>(
    `SELECT extract(epoch FROM r.started - p.finished_at) * 1000 AS gap, r.parents
       FROM wf_runs r, jobvisor.jobs p WHERE r.job_id = $1 AND p.id = $2`,
    [child, parent],
  );
  return { gapMs: Math.round(Number(rows[0]?.gap)), parents: rows[0]?.parents };
}

describe('chaos: an application transaction open while it enqueues children', () => {
  it('held 3 leases while the parent runs: no lease runs out, every job runs once, a pending parent starts', async () => {
    const long = ids(
      await enqueueMany(
        db.pool,
        Array.from({ length: LONG }, () => ({ kind: 'wf_chaos', payload: { ms: 4.5 * LEASE_MS } })),
      ),
    );
    const parent = long[0] as string;
    await until(
      'every long job running',
      () => statusCount(long, 'running'),
      (n) => n === LONG,
      30_000,
    );
    const owners = await count(
      db.pool,
      'SELECT count(DISTINCT locked_by)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[])',
      [long],
    );
    // Not yet due when the application names it; due a second later, with the transaction still open.
    const pendingParent = (await enqueue(db.pool, 'wf_chaos', { ms: 10 }, { delay: 1000 })).id;
    const app = new pg.Client({ connectionString: db.url });
    await app.connect();
    let children: string[];
    let during: Awaited<ReturnType<typeof hold>>;
    try {
      await app.query('BEGIN');
      children = [
        (await enqueue(app, 'wf_chaos', { ms: 10 }, { dependsOn: [parent] })).id,
        (await enqueue(app, 'wf_chaos', { ms: 10 }, { dependsOn: [pendingParent] })).id,
      ];
      during = await hold(long, pendingParent);
      await app.query('COMMIT');
    } finally {
      await app.end();
    }
    const all = [...long, pendingParent, ...children];
    await until(
      'every job done',
      () => statusCount(all, 'done'),
      (n) => n === all.length,
      60_000,
      100,
    );
    const v = await verdict(all);
    const first = await childAfterParent(children[0] as string, parent);
    const second = await childAfterParent(children[1] as string, pendingParent);
    report('app transaction open 3 leases, parent running', {
      leaseMs: LEASE_MS,
      holdMs: HOLD_MS,
      jobs: all.length,
      supervisorsHoldingJobs: owners,
      ...during,
      ...v,
      childAfterRunningParent: first,
      childAfterPendingParent: second,
    });
    assert.ok(during.leastLeftMs > 0, `a lease ran out during the hold (least left ${during.leastLeftMs} ms)`);
    assert.equal(during.pendingStarted, true, 'the pending parent was claimed while the transaction was open');
    assert.deepEqual(v, { runs: { 1: all.length }, leaseExpired: 0 });
    for (const c of [first, second]) {
      assert.ok(c.gapMs >= 0, `a child started ${-c.gapMs} ms before its parent finished`);
      assert.deepEqual(c.parents, { n: 1, notDone: 0 });
    }
  });

  it('the parent finishing while the transaction is open: the COMMIT releases the child at once', async () => {
    const [parent, other] = ids(
      await enqueueMany(db.pool, [
        { kind: 'wf_chaos', payload: { ms: LEASE_MS / 2 } },
        { kind: 'wf_chaos', payload: { ms: 4.5 * LEASE_MS } },
      ]),
    ) as [string, string];
    await until(
      'both running',
      () => statusCount([parent, other], 'running'),
      (n) => n === 2,
      30_000,
    );
    const app = new pg.Client({ connectionString: db.url });
    await app.connect();
    let child: string;
    let during: Awaited<ReturnType<typeof hold>>;
    let parentDoneWhileOpen: boolean;
    let committedAt: Date;
    try {
      await app.query('BEGIN');
      child = (await enqueue(app, 'wf_chaos', { ms: 10 }, { dependsOn: [parent] })).id;
      during = await hold([other], null);
      parentDoneWhileOpen = (await statusCount([parent], 'done')) === 1;
      await app.query('COMMIT');
      committedAt = (await app.query<{ t: Date }>('SELECT clock_timestamp() AS t')).rows[0]?.t as Date;
    } finally {
      await app.end();
    }
    await until(
      'the child done',
      () => statusCount([child, other], 'done'),
      (n) => n === 2,
      60_000,
      50,
    );
    const { rows } = await db.pool.query<{ ms: number }>(
      'SELECT extract(epoch FROM started - $2::timestamptz) * 1000 AS ms FROM wf_runs WHERE job_id = $1',
      [child, committedAt],
    );
    const startAfterCommitMs = Math.round(Number(rows[0]?.ms));
    const v = await verdict([parent, other, child]);
    report('app transaction open 3 leases, parent done meanwhile', {
      leaseMs: LEASE_MS,
      holdMs: HOLD_MS,
      parentDoneWhileOpen,
      leastLeftMs: during.leastLeftMs,
      childStartAfterCommitMs: startAfterCommitMs,
      ...v,
    });
    assert.equal(parentDoneWhileOpen, true, "the parent's done write did not wait for the open transaction");
    assert.ok(during.leastLeftMs > 0, `a lease ran out during the hold (least left ${during.leastLeftMs} ms)`);
    assert.deepEqual(v, { runs: { 1: 3 }, leaseExpired: 0 });
    // Released by the COMMIT itself, not by the reaper's safety net a round later.
    assert.ok(startAfterCommitMs < 1000, `the child started ${startAfterCommitMs} ms after the COMMIT`);
  });
});
