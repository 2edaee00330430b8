/**
 * Every statement the project defines keeps its intended plan on a table that
 * grew from tiny to a million rows without ANALYZE.
 *
 * `planned()` (src/queue/sql.ts) records each statement by
 * name; this file imports every module under src/queue so all of them are
 * recorded, then plans each one with EXPLAIN (FORMAT JSON) and the parameter
 * values below, as an unnamed statement is planned when it runs. The table is
 * analyzed while it holds 40 rows, then grows to a million (pending, running,
 * done, failed and cancelled rows over six queues, ten kinds and three days of
 * finished_at) with autovacuum off, so the planner works from statistics that
 * are badly out of date. Then every statement is planned again just after
 * ANALYZE (fresh statistics of a deep table flip plans as well), and once more
 * as if the table had never been analyzed (its statistics removed from the
 * catalog, which the tests' superuser may do): a backlog loaded into a new
 * database.
 *
 * A statement defined with a plan (`planned(name, text, 'indexWalk')`) is
 * planned under the settings it always runs under.
 *
 * The durable steps' tables (job_steps, job_signals) are analyzed tiny and
 * grow beside it, to 500,000 records and 100,000 signals over 100,000 jobs.
 *
 * Each plan must use what its expectation names and must not read the jobs
 * table, job_steps or job_signals whole: no Seq Scan on any of them, and no Sort fed by a scan of jobs, directly
 * or through an Append (a sort of a given list of ids excepted), unless the expectation says why
 * it may. No plan may keep a node its settings price out (see pricedOut),
 * and none may be JIT-compiled (see compiled).
 *
 * A statement without an expectation fails the test, and so does SQL text on
 * a jobvisor table in src/ that no recorded statement contains. Adding a
 * statement means adding one line to EXPECTED:
 *
 *   my_statement: { values: (f) => [f.runningIds, 'owner'], uses: /Index Scan using jobs_pkey/ },
 *
 * `values` gives the parameters ($1, $2, …) from the fixture's ids; `uses`
 * matches one node as EXPLAIN's text names it ("Index Scan using X on jobs",
 * "Bitmap Index Scan on X", "Index Only Scan using X on jobs"); `wholeTable` and
 * `sorts` say why a statement may read the table whole or sort its rows.
 * Statements inside PL/pgSQL functions (jobvisor.due_job_ids, and the limited
 * claims' jobvisor.claim_queue_limited, claim_key_limited, key_offers and limit_state) are not visible
 * to EXPLAIN; test/plans/plans.test.ts checks them through auto_explain.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { statements } from '../../src/queue/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { describeNode, explainPlan, planNodes, type PlanNode } from '../helpers/explain.ts';

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const GROWN = 1_000_000;
const STEP_TABLES = ['jobvisor.job_steps', 'jobvisor.job_signals'];

interface Fixture {
  runningIds: string[];
  tokens: string[];
  pendingIds: string[];
  failedIds: string[];
  someId: string;
}

interface Expectation {
  values: (f: Fixture) => unknown[];
  /** A node the plan must contain, matched against describeNode(). */
  uses?: RegExp;
  /** Why this statement may read the whole jobs table. */
  wholeTable?: string;
  /** Why this statement may sort rows it read from the jobs table. */
  sorts?: string;
  /** Why this statement may be JIT-compiled. */
  compiles?: string;
}

const HOUR = 3_600_000;
const now = null;
const noFilter = (extra: unknown[]) => [null, null, null, null, null, null, null, null, null, null, null, ...extra];
const failedOfKind = (extra: unknown[]) => [
  null,
  ['failed'],
  null,
  'k3',
  null,
  null,
  null,
  null,
  null,
  null,
  null,
  ...extra,
];

const EXPECTED: Record<string, Expectation> = {
  // Claims and outcomes (src/queue/claim.ts, claim_limited_sql.ts, complete.ts, …).
  claim_jobs: { values: () => ['o', 'default', 60_000, 50, now, 1 << 20, true], uses: /jobs_pkey/ },
  next_due: { values: () => ['default', now], uses: /Index (Only )?Scan using jobs_pending_idx/ },
  // Each limited claim is a function (migrations 032 and 033; claim_limited_sql.ts lists the parameters);
  // plans.test.ts checks their plans through auto_explain.
  claim_queue_limited: {
    values: (f) => [
      ...['o', 'q1', 60_000, 20, now, 1 << 20, 2048, 1000, 5, 1025, 10, 1000, 1, 2],
      ...[`{${f.runningIds.join(',')}}`, `{${f.tokens.join(',')}}`, false],
    ],
    uses: /^Function Scan/,
  },
  claim_key_limited: {
    values: (f) => [
      ...['o', 'q3', 60_000, 20, now, 1 << 20, 2048, null, 2, null, null, false, 0, 1, 2],
      ...[`{${f.runningIds.join(',')}}`, `{${f.tokens.join(',')}}`, false],
      ...[null, 50, null, ['key3'], [3], 1],
    ],
    uses: /^Function Scan/,
  },
  complete_jobs: { values: (f) => [f.runningIds, f.tokens, 'o', now], uses: /jobs_(pkey|running_idx)/ },
  delete_done_jobs: { values: (f) => [f.runningIds, f.tokens, 'o'], uses: /jobs_(pkey|running_idx)/ },
  complete_jobs_reported: {
    values: (f) => [f.runningIds, f.tokens, 'o', now, f.tokens.map(() => '{}'), f.tokens.map(() => null)],
    uses: /jobs_(pkey|running_idx)/,
  },
  fail_jobs: {
    values: (f) => [
      f.runningIds,
      f.tokens,
      f.runningIds.map(() => false),
      f.runningIds.map(() => 1000),
      f.runningIds.map(() => 'x'),
      'o',
      now,
      f.runningIds.map(() => null),
    ],
    uses: /jobs_(pkey|running_idx)/,
  },
  release_jobs: { values: (f) => [f.runningIds, f.tokens, 'o'], uses: /jobs_(pkey|running_idx)/ },
  renew_leases: { values: (f) => [f.runningIds, 'o', 60_000, now, f.tokens], uses: /jobs_(pkey|running_idx)/ },
  start_batch_call: {
    values: (f) => [f.runningIds, 'o', 60_000, now, f.tokens, f.tokens[0]],
    uses: /jobs_(pkey|running_idx)/,
  },
  write_progress: {
    values: (f) => [f.runningIds, f.tokens, f.tokens.map(() => '{}'), 'o'],
    uses: /jobs_(pkey|running_idx)/,
  },
  snooze_jobs: {
    values: (f) => [f.runningIds, f.tokens, f.tokens.map(() => 1000), 100, 'o', now],
    uses: /jobs_(pkey|running_idx)/,
  },
  // Durable steps, sleeps, waits and signals (src/queue/steps.ts, sleep.ts, wait.ts, signal.ts).
  // Each reads or writes one job's records by job_steps_pkey (no whole read of job_steps: wholeTableRead).
  // load_steps and take_wait read a batch of a thread's runs (worker/step_reads.ts).
  // With a cap ($4): the supervisor's read after a claim (supervisor/claim/claimed_steps.ts).
  load_steps: { values: (f) => [f.runningIds, f.tokens, now, 8192], uses: /jobs_(pkey|running_idx)/ },
  record_step: { values: (f) => [f.someId, f.tokens[0], 's', '1', 5, now], uses: /jobs_(pkey|running_idx)/ },
  // `jobs show` and the dashboard's job page: one job's records by the job_steps primary key.
  admin_steps_of: { values: (f) => [f.someId], uses: /job_steps_pkey/ },
  take_wait: {
    values: (f) => [f.runningIds, f.tokens, f.tokens.map(() => 'w'), now],
    uses: /jobs_(pkey|running_idx)/,
  },
  sleep_jobs: {
    values: (f) => [
      f.runningIds,
      f.tokens,
      'o',
      f.tokens.map(() => 's'),
      f.tokens.map(() => null),
      f.tokens.map(() => 1000),
      now,
    ],
    uses: /jobs_(pkey|running_idx)/,
  },
  // Functions of migration 028: their statements are checked in plans.test.ts (auto_explain).
  park_waits: {
    values: (f) => [
      f.runningIds,
      f.tokens,
      'o',
      f.tokens.map(() => 'w'),
      f.tokens.map(() => null),
      f.tokens.map(() => 1000),
      now,
    ],
    uses: /^Function Scan/,
  },
  signal: {
    values: (f) => [f.someId, 'w', null, true],
    wholeTable: 'reads no table itself: jobvisor.signal() does (plans.test.ts)',
  },
  wake_timed_out_waits: { values: () => [1000, now], uses: /jobs_waiting_idx/ },
  dead_letter_claimed: { values: (f) => [f.someId, '1', 'o', 'x', now], uses: /jobs_(pkey|running_idx)/ },
  dead_letter_expired: { values: (f) => [f.someId, 'x', now], uses: /jobs_(pkey|running_idx)/ },
  // Analyzed, the planner may take jobs_cancelled_idx with `finished_at IS NULL` as its
  // index condition: the same few rows, at the end of that index (2 buffers for 10,000 cancelled).
  end_cancelled_runs: {
    values: (f) => [f.runningIds, 'o', now],
    uses: /jobs_(pkey|cancelled_running_idx|cancelled_idx)/,
  },
  finish_stale_cancelled: { values: () => [1000, now], uses: /jobs_cancelled_(running_)?idx/ },

  // Enqueue (src/queue/enqueue.ts, copy.ts).
  insert_jobs: {
    values: () => [['default'], ['k1'], ['{}'], [0], [null], [null], [null], [null], null, [null]],
    wholeTable: 'an insert reads no rows of jobs',
  },
  find_unique: { values: () => [['k1'], ['u20']], uses: /jobs_unique_key_idx/ },
  reserve_ids: { values: () => [10], wholeTable: 'reads no table' },

  // Workflows (src/queue/workflow.ts, parents.ts, settle.ts, admin/workflow.ts, admin/graph_actions.ts).
  insert_graph: {
    values: (f) => [
      ['default'],
      ['k1'],
      ['{}'],
      [0],
      [null],
      [null],
      [null],
      [null],
      null,
      [null],
      [null],
      [false],
      [f.someId],
      [1],
      [f.someId],
      [null],
    ],
    uses: /jobs_pkey/,
  },
  parents_page: { values: (f) => [f.someId, '0', 1000, 8 << 20], uses: /jobs_pkey/ },
  read_payload: { values: (f) => [f.runningIds[0], f.tokens[0], 1 << 20], uses: /jobs_(pkey|running_idx)/ },
  settle_stragglers: { values: () => [1000], uses: /jobs_pkey/ },
  // The dependents' rows by id, or the cancelled rows' own index (the planner's pick when it
  // thinks few are cancelled): an operator's command, and either walk is bounded.
  admin_retry_dependents: { values: (f) => [[f.someId]], uses: /jobs_(pkey|cancelled_idx)/ },
  admin_delete_force: {
    values: (f) => failedOfKind([f.failedIds]),
    uses: /jobs_pkey/,
    sorts: 'the given ids, locked in order',
  },
  admin_related: { values: (f) => [f.someId, 50], uses: /jobs_pkey/ },
  admin_related_counts: { values: (f) => [f.someId], uses: /jobs_pkey/ },
  admin_workflow_component: { values: (f) => [f.someId, 2000], uses: /job_dependencies/ },
  admin_workflow_nodes: { values: (f) => [[f.someId]], uses: /jobs_pkey/, sorts: 'the given ids' },
  admin_workflow_edges: { values: (f) => [[f.someId]], uses: /job_dependencies/ },

  // Cluster mode (src/queue/hand_back.ts).
  hand_back_jobs_of: {
    values: () => ['o', 'process exited', now],
    uses: /jobs_running_idx/,
    sorts: "one supervisor's running rows (its jobs in flight), locked in id order",
  },

  // Maintenance (src/queue/reaper.ts, cleanup.ts).
  reap_leases: { values: () => [1000, now, null], uses: /^Index Scan using jobs_running_idx/ },
  list_expired_leases: {
    values: () => [1000, now, []],
    uses: /^Index Scan using jobs_running_idx/,
  },
  delete_finished: {
    values: () => [HOUR, 30 * 24 * HOUR, 5000, now],
    uses: /^Index Scan using jobs_finished_idx on jobs$/,
  },
  // The per-minute rollup of finished jobs (src/queue/finished_rollup.ts).
  roll_up_finished: {
    values: () => [15 * 60_000, now],
    uses: /jobs_finished_idx/,
    sorts: 'the finished rows of one chunk (15 minutes at most), grouped by minute and queue',
  },
  delete_old_minutes: { values: () => [now], wholeTable: 'jobvisor.finished_minutes only' },
  rollup_watermark: { values: () => [], wholeTable: 'jobvisor.finished_rollup only (one row)' },

  // Gauges and stats (src/queue/stats.ts, daily_stats.ts, pause.ts).
  count_active: { values: () => [now], uses: /jobs_pending_idx/ },
  count_recently_finished: {
    values: () => [now, new Date(Date.now() - 60_000)],
    uses: /jobs_(finished|cancelled)_idx/,
    sorts: 'the last hour of finished rows, grouped (a range of jobs_finished_idx)',
  },
  count_all: {
    values: () => [now],
    wholeTable: '`jobvisor stats --all` counts every row by design',
    // PostgreSQL 15 groups the rows of a parallel scan by sorting them; 17 hashes them.
    sorts: 'grouping every row (stats --all) may sort it',
  },
  oldest_due: { values: () => [now], uses: /jobs_pending_idx/ },
  daily_stats: {
    values: () => [new Date().toISOString().slice(0, 10), 'UTC'],
    uses: /jobs_finished_idx/,
    wholeTable: 'the retries of a day are read from every row with an error history (once a day, daily_report)',
    sorts: 'the same rows, for the percentiles',
    compiles: 'a day of finished rows and every error history, once a day: compiling can pay back there',
  },
  day_before_due: { values: (f) => [f.someId, 'UTC'], uses: /jobs_pkey/ },
  set_paused: { values: () => ['q1', true], wholeTable: 'jobvisor.queues only' },
  paused_queues: { values: () => [], wholeTable: 'jobvisor.queues only' },
  see_schedules: { values: () => [['nightly'], ['0 2 * * *'], [''], now], wholeTable: 'jobvisor.schedules only' },
  list_queues: { values: () => [], uses: /jobs_(pending|running|blocked)_idx/ },

  // Admin API and dashboard (src/queue/admin/).
  admin_next_batch: { values: () => failedOfKind([null, 500]), uses: /jobs_failed_idx/ },
  admin_retry: {
    values: (f) => failedOfKind([f.failedIds]),
    uses: /jobs_pkey/,
    sorts: 'the given ids, locked in order',
  },
  admin_cancel: { values: (f) => noFilter([f.pendingIds]), uses: /jobs_pkey/, sorts: 'the given ids, locked in order' },
  admin_run_now: {
    values: (f) => noFilter([f.pendingIds]),
    uses: /jobs_pkey/,
    sorts: 'the given ids, locked in order',
  },
  admin_delete: {
    values: (f) => failedOfKind([f.failedIds]),
    uses: /jobs_pkey/,
    sorts: 'the given ids, locked in order',
  },
  admin_notify_queues: { values: () => [['q1']], wholeTable: 'reads no table' },
  admin_dead_letter_groups: {
    values: () => [50],
    uses: /jobs_failed_idx/,
    sorts: 'groups of dead letters, read through their own index',
  },
  admin_list_jobs: { values: () => noFilter([null, 50]), uses: /^Index Scan using jobs_pkey/ },
  admin_list_jobs_newer: { values: (f) => failedOfKind([f.someId, 50]), uses: /jobs_failed_idx/ },
  admin_count_jobs: { values: () => failedOfKind([10_000]), uses: /jobs_failed_idx/ },
  status_of: { values: (f) => [f.pendingIds], uses: /jobs_pkey/ },
  admin_get_job: { values: (f) => [f.someId], uses: /jobs_pkey/ },
  admin_batch_call: { values: (f) => [f.someId, 100], uses: /jobs_batch_idx/ },
  admin_batch_call_counts: { values: (f) => [f.someId], uses: /jobs_batch_idx/ },
  admin_last_fire: {
    values: () => ['k1', 'sched:'],
    uses: /jobs_unique_key_idx/,
    sorts: "one schedule's fire times, found through the unique key index",
  },
  admin_queue_counts: {
    values: () => [now, 100_000, new Date(Date.now() - 60_000)],
    uses: /jobs_finished_idx/,
  },
  admin_oldest_due: { values: () => [now], uses: /jobs_pending_idx/ },
  admin_queue_running_by_key: {
    values: () => ['q3', 20],
    uses: /jobs_running(_key)?_idx/,
    sorts: 'running keys of one queue, read through their own index',
  },
  admin_queue_recent_starts: { values: () => ['q1', 60_000, now, 20], wholeTable: 'jobvisor.rate_starts only' },
  admin_throughput: {
    values: () => [new Date(Date.now() - 24 * HOUR), 3_600_000, new Date(Date.now() - 60_000)],
    uses: /jobs_finished_idx/,
    sorts: 'the finished rows of the range asked for (a day at most), into buckets',
  },
  admin_throughput_minutes: {
    values: () => [new Date(Date.now() - HOUR)],
    wholeTable: 'jobvisor.finished_rollup and finished_minutes only',
  },
  admin_throughput_quarters: {
    values: () => [new Date(Date.now() - 24 * HOUR)],
    wholeTable: 'jobvisor.finished_rollup and finished_quarters only',
  },
  admin_now: { values: () => [], wholeTable: 'reads no table' },
  supervisor_beat: {
    values: () => ['s', 'h', 1, '0', '{}', 0, 60_000, now, '{}', null, null],
    wholeTable: 'jobvisor.supervisors only',
  },
  supervisor_remove: { values: () => ['s'], wholeTable: 'jobvisor.supervisors only' },
  supervisor_expire: { values: () => [now], wholeTable: 'jobvisor.supervisors only' },
  supervisor_list: { values: () => [now], wholeTable: 'jobvisor.supervisors only' },
};

/** The tables no statement may read whole: jobs, and the durable steps' records and signals, which grow with it. */
const BIG_TABLES = new Set(['jobs', 'job_steps', 'job_signals']);

/** Why `plan` reads the jobs table (or job_steps, job_signals) whole, or undefined. */
function wholeTableRead(plan: PlanNode): string | undefined {
  for (const node of planNodes(plan)) {
    if (node['Node Type'] === 'Seq Scan' && BIG_TABLES.has(node['Relation Name'] ?? '')) return describeNode(node);
  }
  return undefined;
}

/**
 * A node that costs more than the planner's disable_cost (10^10), or undefined.
 * Under `throughIndexes` or `indexWalk` a plan that still needs a priced-out
 * node (a sequential scan where no index applies) costs that much, which is
 * past jit_above_cost: PostgreSQL JIT-compiled the whole statement before
 * running it, 480 ms for the rollup of finished jobs, which ran in 1 ms.
 */
function pricedOut(plan: PlanNode): string | undefined {
  const node = planNodes(plan).find((n) => (n['Total Cost'] ?? 0) >= 1e10);
  return node && describeNode(node);
}

/**
 * Why `plan` would be JIT-compiled before it runs, or undefined: JIT on in
 * the statement's settings and its cost past jit_above_cost. With 20,000
 * pending jobs beside 5 M finished rows, the Overview's queue counts compiled
 * 63 functions for 17 ms of a 23-ms read; compiling never pays back on a
 * statement that runs for milliseconds, so a statement whose estimate can get
 * there runs with JIT off (`planned(…, 'throughIndexes')` turns it off).
 */
async function compiled(plan: PlanNode): Promise<string | undefined> {
  const { rows } = await client.query<{ jit: string; above: string }>(
    "SELECT current_setting('jit') AS jit, current_setting('jit_above_cost') AS above",
  );
  const { jit, above } = rows[0] as { jit: string; above: string };
  const cost = plan['Total Cost'] ?? 0;
  if (jit !== 'on' || Number(above) < 0 || cost < Number(above)) return undefined;
  return `cost ${Math.round(cost)} is past jit_above_cost ${above} with jit on`;
}

/** Nodes that pass their input's rows on unchanged in number: a Sort above them sorts what the scans below read. */
const PASS_THROUGH = new Set(['Append', 'Result', 'Subquery Scan', 'Gather']);

/** The scans of jobs feeding `node` directly or through PASS_THROUGH nodes. */
function scansBelow(node: PlanNode): PlanNode[] {
  return (node.Plans ?? []).flatMap((child) => {
    if (PASS_THROUGH.has(child['Node Type'])) return scansBelow(child);
    return child['Relation Name'] === 'jobs' && child['Node Type'].endsWith('Scan') ? [child] : [];
  });
}

/**
 * A Sort fed by a scan of jobs (not of a given list of ids), directly or
 * through an Append of branches, or undefined.
 */
function sortOfJobs(plan: PlanNode): string | undefined {
  for (const node of planNodes(plan)) {
    if (node['Node Type'] !== 'Sort' && node['Node Type'] !== 'Incremental Sort') continue;
    for (const scan of scansBelow(node)) {
      const byIds = /\bid = ANY\b/.test(`${scan['Index Cond'] ?? ''} ${scan['Recheck Cond'] ?? ''}`);
      if (!byIds) return `${node['Node Type']} of ${describeNode(scan)}`;
    }
  }
  return undefined;
}

let db: TestDatabase;
let client: pg.PoolClient;
let fixture: Fixture;

async function importEveryStatement(): Promise<void> {
  const root = path.join(src, 'queue');
  for (const file of readdirSync(root, { recursive: true }) as string[])
    if (file.endsWith('.ts')) await import(path.join(root, file));
}

before(async () => {
  await importEveryStatement();
  db = await createTestDatabase('statements');
  client = await db.pool.connect();
  for (const table of STEP_TABLES) await client.query(`ALTER TABLE ${table} SET (autovacuum_enabled = off)`);
  await client.query('ALTER TABLE jobvisor.jobs SET (autovacuum_enabled = off)');
  // Tiny and analyzed, as autovacuum leaves a table after a quiet spell.
  await client.query(`INSERT INTO jobvisor.jobs (kind, payload) SELECT 'k1', '{}' FROM generate_series(1, 40)`);
  await client.query(
    `INSERT INTO jobvisor.job_steps (job_id, name, result) SELECT i, 's', '1' FROM generate_series(1, 40) AS i`,
  );
  await client.query(`INSERT INTO jobvisor.job_signals (job_id, name) SELECT i, 'w' FROM generate_series(1, 40) AS i`);
  await client.query('ANALYZE jobvisor.jobs');
  for (const table of STEP_TABLES) await client.query(`ANALYZE ${table}`);
  // Grown to a million rows in every status, with no ANALYZE since.
  await client.query(
    `INSERT INTO jobvisor.jobs (queue, kind, payload, status, attempts, run_at, locked_by, locked_until, lease_token,
                                last_error, errors, unique_key, concurrency_key, started_at, finished_at)
     SELECT CASE WHEN i % 6 = 0 THEN 'default' ELSE 'q' || (i % 6) END, 'k' || (i % 10), jsonb_build_object('i', i),
            s, CASE WHEN s = 'pending' THEN 0 ELSE 1 END,
            CASE WHEN s = 'pending' AND i % 1000 < 100 THEN now() + interval '1 hour' ELSE now() - f END,
            CASE WHEN s IN ('running', 'done', 'failed') THEN 'o' END,
            CASE WHEN s = 'running' THEN now() + CASE WHEN i % 1000 = 5 THEN interval '-1 minute' ELSE interval '1 minute' END END,
            CASE WHEN s = 'running' THEN i END,
            CASE WHEN s = 'failed' THEN 'boom ' || (i % 7) END,
            CASE WHEN s = 'failed' THEN jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now() - f, 'error', 'boom')) ELSE '[]' END,
            CASE WHEN i % 20 = 0 THEN 'u' || i END,
            CASE WHEN i % 10 = 3 THEN 'key' || (i % 50) END,
            CASE WHEN s <> 'pending' THEN now() - f END,
            CASE WHEN s IN ('done', 'failed', 'cancelled') THEN now() - f END
       FROM generate_series(1, ${GROWN}) AS i,
            LATERAL (SELECT CASE WHEN i % 100 < 5 THEN 'pending' WHEN i % 100 = 5 THEN 'running'
                                 WHEN i % 100 = 6 THEN 'failed' WHEN i % 100 = 7 THEN 'cancelled' ELSE 'done' END AS s,
                            (${GROWN} - i) * interval '250 milliseconds' AS f) AS x`,
  );
  // Five records (steps, sleeps, waits) for each of 100,000 jobs, and a signal for each: no ANALYZE since either.
  await client.query(
    `INSERT INTO jobvisor.job_steps (job_id, name, kind, result, attempt, started_at, finished_at, wake_at)
     SELECT i, k::text, (ARRAY['step', 'step', 'step', 'sleep', 'wait'])[k], '{"ok": true}', 1, now(), now(),
            CASE WHEN k > 3 THEN now() END
       FROM generate_series(41, 100000) AS i, generate_series(1, 5) AS k`,
  );
  await client.query(
    `INSERT INTO jobvisor.job_signals (job_id, name, payload) SELECT i, '5', '{}' FROM generate_series(41, 100000) AS i`,
  );
  const ids = async (sql: string) => (await client.query<{ id: string }>(sql)).rows.map((r) => r.id);
  const running = await client.query<{ id: string; token: string }>(
    `SELECT id, lease_token::text AS token FROM jobvisor.jobs WHERE status = 'running' LIMIT 500`,
  );
  fixture = {
    runningIds: running.rows.map((r) => r.id),
    tokens: running.rows.map((r) => r.token),
    pendingIds: await ids(`SELECT id FROM jobvisor.jobs WHERE status = 'pending' LIMIT 500`),
    failedIds: await ids(`SELECT id FROM jobvisor.jobs WHERE status = 'failed' LIMIT 500`),
    someId: String(GROWN / 2),
  };
});

after(async () => {
  client?.release();
  await db?.drop();
});

describe('every statement on a table that grew from tiny to a million rows without ANALYZE', () => {
  it('has a plan expectation for every statement the project defines, and none for a statement it does not', () => {
    const missing = [...statements.keys()].filter((name) => !(name in EXPECTED));
    assert.deepEqual(
      missing,
      [],
      `statements without an expectation in test/plans/statements.test.ts: ${missing.join(', ')}`,
    );
    const stale = Object.keys(EXPECTED).filter((name) => !statements.has(name));
    assert.deepEqual(stale, [], `expectations for statements that no longer exist: ${stale.join(', ')}`);
    assert.ok(statements.size >= 50, `only ${statements.size} statements recorded`);
  });

  it('finds no SQL on a jobvisor table in src/ outside the recorded statements', () => {
    const recorded = [...statements.values()].map((s) => squash(s.text)).join('\n');
    const strays: string[] = [];
    for (const file of readdirSync(src, { recursive: true }) as string[]) {
      if (!file.endsWith('.ts') || file.startsWith('bench/') || file === 'db/migrate.ts') continue;
      const text = readFileSync(path.join(src, file), 'utf8').replace(/\/\*\*[\s\S]*?\*\//g, '');
      for (const [, literal] of text.matchAll(/`([^`]*)`/g)) {
        if (!/\b(SELECT|UPDATE|DELETE|INSERT)\b[\s\S]*\bjobvisor\.\w/.test(literal ?? '')) continue;
        for (const piece of (literal ?? '').split(/\$\{[^}]*\}/))
          if (!recorded.includes(squash(piece))) strays.push(`${file}: ${piece.trim().slice(0, 80)}`);
      }
    }
    assert.deepEqual(strays, [], 'SQL that is not defined through planned()');
  });

  planEveryStatement();
});

describe('every statement on the same table just analyzed', () => {
  // Fresh statistics of a deep table flip plans too: the pending count sorted
  // every pending row to group them once it knew how many done rows sat beside them.
  before(async () => {
    await client.query('ANALYZE jobvisor.jobs');
    for (const table of STEP_TABLES) await client.query(`ANALYZE ${table}`);
  });
  planEveryStatement();
});

describe('every statement on the same table as if it had never been analyzed', () => {
  before(async () => {
    // A table that was never analyzed: no column statistics, no row count (reltuples -1),
    // so PostgreSQL estimates from its size on disk. The state the table is in when a
    // backlog is loaded into a new database, before autovacuum's first ANALYZE.
    for (const table of ['jobvisor.jobs', ...STEP_TABLES]) {
      await client.query(`DELETE FROM pg_statistic WHERE starelid = '${table}'::regclass`);
      await client.query(`UPDATE pg_class SET reltuples = -1, relpages = 0, relallvisible = 0
                           WHERE oid = '${table}'::regclass
                              OR oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = '${table}'::regclass)`);
    }
  });
  planEveryStatement();
});

/** One test per expectation: the plan of its statement now. */
function planEveryStatement(): void {
  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(name, async (t) => {
      const recorded = statements.get(name);
      if (recorded === undefined) return t.skip('not defined (see the first test)');
      await client.query('BEGIN');
      try {
        // The settings the statement always runs under (planned(name, text, plan) in src/queue/sql.ts).
        if (recorded.settings) await client.query(recorded.settings);
        const plan = await explainPlan(client, recorded.text, expected.values(fixture));
        const shown = planNodes(plan).map(describeNode).join('\n');
        if (expected.uses)
          assert.ok(
            planNodes(plan).some((n) => expected.uses?.test(describeNode(n))),
            `${name} should use ${expected.uses}:\n${shown}`,
          );
        if (!expected.wholeTable) assert.equal(wholeTableRead(plan), undefined, `${name}:\n${shown}`);
        assert.equal(pricedOut(plan), undefined, `${name} keeps a node its settings price out:\n${shown}`);
        if (!expected.compiles)
          assert.equal(await compiled(plan), undefined, `${name} would be JIT-compiled:\n${shown}`);
        if (!expected.sorts) assert.equal(sortOfJobs(plan), undefined, `${name}:\n${shown}`);
      } finally {
        await client.query('ROLLBACK');
      }
    });
  }
}

function squash(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim();
}
