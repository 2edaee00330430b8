/**
 * The admin reads keep their index plans on a table of finished history:
 * none reads the whole table (except free-text search, which must). The plan
 * each actually executed comes back from auto_explain as a notice, as in
 * test/plans/plans.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { createPool } from '../../src/db/pool.ts';
import {
  countJobs,
  deadLetterGroups,
  deleteJobs,
  listJobs,
  overview,
  queueDetail,
  beatSupervisor,
  relationsOf,
  retryJobs,
  throughput,
  workflowOf,
} from '../../src/queue/admin/index.ts';
import type { Store } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { fanIn, insertWorkflow } from '../helpers/workflow.ts';

let db: TestDatabase;
let pool: pg.Pool;
let store: Store;
let workflow: string[];
const plans: string[] = [];

async function planOf(fn: () => Promise<unknown>): Promise<string> {
  plans.length = 0;
  await fn();
  const text = plans.join('\n');
  assert.ok(text.length > 0, 'auto_explain reported no plan');
  return text;
}

/** The failure's first line names the pattern; the plan follows. */
function uses(plan: string, pattern: RegExp): void {
  assert.match(plan, pattern, `the plan has no ${pattern}:\n${plan}`);
}

function never(plan: string, pattern: RegExp): void {
  assert.doesNotMatch(plan, pattern, `the plan has ${pattern}:\n${plan}`);
}

before(async () => {
  db = await createTestDatabase('admin_plans');
  pool = createPool(db.url, { max: 1 });
  pool.on('connect', (client) => client.on('notice', (n) => plans.push(n.message ?? '')));
  store = { db: pool, schema: 'jobvisor' };
  await pool.query(`INSERT INTO jobvisor.jobs (kind, queue, status, finished_at, payload)
                    SELECT 'k' || (i % 5), 'q' || (i % 3), 'done', now() - (200000 - i) * interval '1 second', '{}'
                      FROM generate_series(1, 200000) AS i`);
  await pool.query(`INSERT INTO jobvisor.jobs (kind, queue, status, finished_at, last_error)
                    SELECT 'k' || (i % 5), 'q' || (i % 3), 'failed', now() - i * interval '1 minute', 'boom ' || (i % 7)
                      FROM generate_series(1, 1000) AS i`);
  await pool.query(
    `INSERT INTO jobvisor.jobs (kind, queue) SELECT 'k' || (i % 5), 'q' || (i % 3) FROM generate_series(1, 5000) AS i`,
  );
  // Running jobs as a busy keyed queue has them: a few hundred per queue hold
  // per-key slots, more run without a key. With no running rows at all the two
  // partial indexes on running jobs are both empty and tie, and the planner's
  // pick between them says nothing about the queue page.
  await pool.query(`INSERT INTO jobvisor.jobs (kind, queue, status, concurrency_key, locked_until)
                    SELECT 'k' || (i % 5), 'q' || (i % 3), 'running', CASE WHEN i % 4 = 0 THEN 'c' || (i % 97) END,
                           now() + interval '1 hour'
                      FROM generate_series(1, 2400) AS i`);
  // 100,000 small workflows of two finished jobs among the done rows, and one
  // fan-in of 2,000 done parents whose merge and e-mail jobs are blocked.
  await pool.query(`INSERT INTO jobvisor.job_dependencies (child_id, parent_id)
                    SELECT i + 1, i FROM generate_series(1, 200000, 2) AS i`);
  workflow = await insertWorkflow(pool, fanIn(2000));
  await pool.query('VACUUM ANALYZE jobvisor.jobs');
  await pool.query('VACUUM ANALYZE jobvisor.job_dependencies');
  await pool.query(`LOAD 'auto_explain'`);
  await pool.query(`SET auto_explain.log_level = notice`);
  await pool.query(`SET auto_explain.log_nested_statements = on`);
  await pool.query(`SET auto_explain.log_min_duration = 0`);
});

after(async () => {
  await pool?.end();
  await db?.drop();
});

describe('admin reads on 206 k rows', () => {
  it('the overview reads each status through its index, never the table', async () => {
    const plan = await planOf(() => overview(store));
    uses(plan, /jobs_pending_idx/);
    uses(plan, /jobs_blocked_idx/);
    uses(plan, /jobs_finished_idx/);
    // The supervisors table is tiny and may be read whole; the jobs table never.
    never(plan, /Seq Scan on jobs/);
  });

  it('throughput counts finished rows from jobs_finished_idx alone', async () => {
    const plan = await planOf(() => throughput(store, 'day'));
    uses(plan, /Index Only Scan using jobs_finished_idx/);
    // The rollup's tables (a day of minutes per queue, one watermark row) may be read whole; the jobs table never.
    never(plan, /Seq Scan on jobs\b/);
  });

  it('filtered lists, counts, groups and bulk actions by status use the partial indexes', async () => {
    const checks: Array<[string, () => Promise<unknown>]> = [
      ['list failed', () => listJobs(store, { status: 'failed' }, { limit: 50 })],
      ['list blocked', () => listJobs(store, { status: 'blocked' }, { limit: 50 })],
      ['list pending of a queue', () => listJobs(store, { status: 'pending', queue: 'q1' }, { limit: 50 })],
      [
        'list scheduled of a queue',
        () => listJobs(store, { status: 'pending', due: false, queue: 'q1' }, { limit: 50 }),
      ],
      ['newer page of failed', () => listJobs(store, { status: 'failed' }, { limit: 50, before: '200100' })],
      ['count failed of a kind', () => countJobs(store, { status: 'failed', kind: 'k2' })],
      ['dead-letter groups', () => deadLetterGroups(store)],
      ['retry a group', () => retryJobs(store, { filter: { status: 'failed', kind: 'k3', errorPrefix: 'boom 1' } })],
      ['delete old dead letters', () => deleteJobs(store, { filter: { status: 'failed', olderThan: 600 * 60_000 } })],
    ];
    for (const [name, fn] of checks) {
      const plan = await planOf(fn);
      assert.doesNotMatch(plan, /Seq Scan/, `${name}: ${plan}`);
    }
  });

  it('the queue page reads its limits through the claim indexes, never the jobs table', async () => {
    await beatSupervisor(store, {
      id: 'plan:1',
      host: 'h',
      pid: 1,
      version: '0',
      queues: { q1: 4 },
      queueConfig: {
        q1: {
          concurrency: 4,
          jobsPerThread: 4,
          prefetch: 0,
          timeoutMs: null,
          perKeyConcurrency: 1,
          rateLimit: { count: 5, periodMs: 1000, perKey: true },
        },
      },
      inFlight: 0,
      leaseMs: 60_000,
    });
    const plan = await planOf(() => queueDetail(store, 'q1'));
    uses(plan, /jobs_running_key_idx/);
    uses(plan, /rate_starts/);
    never(plan, /Seq Scan on jobs/);
  });

  it("a job's parents, dependents and workflow follow the edges' indexes, never a table whole", async () => {
    const [parent, merge] = [workflow[0]!, workflow[2000]!];
    const checks: Array<[string, () => Promise<unknown>, RegExp[]]> = [
      [
        'parents of a fan-in',
        () => relationsOf(store, merge),
        [/job_dependencies_pkey/, /job_dependencies_parent_idx/],
      ],
      ['dependents of a parent', () => relationsOf(store, parent), [/job_dependencies_parent_idx/]],
      [
        'workflow of a fan-in',
        () => workflowOf(store, merge),
        [/job_dependencies_pkey/, /job_dependencies_parent_idx/],
      ],
      ['workflow of two', () => workflowOf(store, '2'), [/job_dependencies_pkey/]],
    ];
    for (const [name, fn, indexes] of checks) {
      const plan = await planOf(fn);
      assert.doesNotMatch(plan, /Seq Scan/, `${name}: ${plan}`);
      for (const index of indexes) assert.match(plan, index, `${name}: ${plan}`);
    }
  });
});
