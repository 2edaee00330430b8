/**
 * Migration 022: every vacuum of jobvisor.jobs cleans its indexes. On a table
 * whose history is large beside its recent work, PostgreSQL (14 and later)
 * otherwise bypasses the index pass, and the dead entries of claimed jobs stay
 * at the front of jobs_pending_idx, where every claim starts.
 *
 * 500,000 finished rows and 2,000 jobs claimed and completed through the real
 * claim and completion: the pages with dead versions are under 2 % of the
 * table. With the storage parameter reset to PostgreSQL's default, VACUUM
 * VERBOSE says it bypassed the index scan and the claim's first probe reads
 * the dead entries' pages; with the migration's statement, the index scan
 * runs and the probe reads a few pages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listMigrations } from '../../src/db/migrate.ts';
import { claimJobs } from '../../src/queue/claim.ts';
import { completeJobs } from '../../src/queue/complete.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const HISTORY = 500_000;
const WORKED = 2_000;
let db: TestDatabase;

/** VACUUM VERBOSE's INFO lines for jobvisor.jobs. */
async function vacuumVerbose(): Promise<string> {
  const client = await db.pool.connect();
  const lines: string[] = [];
  const onNotice = (n: { message?: string }) => lines.push(n.message ?? '');
  client.on('notice', onNotice);
  try {
    await client.query('VACUUM (VERBOSE) jobvisor.jobs');
  } finally {
    client.off('notice', onNotice);
    client.release();
  }
  return lines.join('\n');
}

/** Buffers the claim's first probe (the lowest pending priority of a queue) reads. */
async function probeBuffers(): Promise<number> {
  const { rows } = await db.pool.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
     SELECT j.priority FROM jobvisor.jobs AS j WHERE j.status = 'pending' AND j.queue = 'work' ORDER BY j.priority LIMIT 1`,
  );
  const plan = (rows[0]?.['QUERY PLAN'] as { Plan: Record<string, number> }[])[0]?.Plan ?? {};
  return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
}

/** WORKED jobs of queue `work` enqueued, claimed and completed in batches of 200, then 10 left pending. */
async function work(): Promise<void> {
  const store = { db: db.pool, schema: 'jobvisor' };
  await db.pool.query(`INSERT INTO jobvisor.jobs (queue, kind) SELECT 'work', 'k' FROM generate_series(1, ${WORKED})`);
  for (let done = 0; done < WORKED;) {
    const jobs = await claimJobs(store, { owner: 'test', queue: 'work', limit: 200, leaseMs: 60_000 });
    assert.ok(jobs.length > 0, `the backlog ran out after ${done} jobs`);
    const fenced = await completeJobs(
      store,
      'test',
      jobs.map((j) => j.id),
      jobs.map((j) => j.token),
    );
    assert.equal(fenced.size, 0);
    done += jobs.length;
  }
  await db.pool.query(`INSERT INTO jobvisor.jobs (queue, kind) SELECT 'work', 'k' FROM generate_series(1, 10)`);
}

before(async () => {
  db = await createTestDatabase('vacuum_index_cleanup');
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (kind, status, started_at, finished_at)
     SELECT 'history', 'done', now() - interval '2 hours', now() - interval '1 hour'
       FROM generate_series(1, ${HISTORY})`,
  );
  // Only the test's VACUUMs run, so each sees exactly the work before it.
  await db.pool.query('ALTER TABLE jobvisor.jobs SET (autovacuum_enabled = off)');
  await db.pool.query('VACUUM jobvisor.jobs');
});

after(async () => {
  await db?.drop();
});

describe('vacuum of a table with a long history', () => {
  it('is set to clean the indexes by the migrations', async () => {
    const { rows } = await db.pool.query<{ reloptions: string[] }>(
      `SELECT reloptions FROM pg_class WHERE oid = 'jobvisor.jobs'::regclass`,
    );
    assert.ok(rows[0]?.reloptions.includes('vacuum_index_cleanup=on'), String(rows[0]?.reloptions));
  });

  let bypassedBuffers = 0;
  it("bypasses the index scan with PostgreSQL's default, and the claim's probe reads the dead entries", async (t) => {
    await db.pool.query('ALTER TABLE jobvisor.jobs RESET (vacuum_index_cleanup)');
    await work();
    const verbose = await vacuumVerbose();
    assert.match(verbose, /index scan bypassed/, verbose);
    bypassedBuffers = await probeBuffers();
    t.diagnostic(`the probe read ${bypassedBuffers} buffers`);
  });

  it("runs the index scan with migration 022's statement, and the probe reads a few pages", async (t) => {
    const migration = listMigrations().find((m) => m.name === '022_vacuum_index_cleanup');
    assert.ok(migration, 'migration 022 exists');
    await db.pool.query(migration.sql);
    await work();
    const verbose = await vacuumVerbose();
    assert.match(verbose, /index scan needed/, verbose);
    assert.doesNotMatch(verbose, /index scan bypassed/, verbose);
    const buffers = await probeBuffers();
    t.diagnostic(`the probe read ${buffers} buffers`);
    assert.ok(buffers <= 5, `the probe read ${buffers} buffers`);
    assert.ok(buffers < bypassedBuffers, `${buffers} buffers, against ${bypassedBuffers} when bypassed`);
  });
});
