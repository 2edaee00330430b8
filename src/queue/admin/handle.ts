/**
 * createAdmin: the admin API behind one handle. It is given the pool (and the
 * schema, and a statement bound) once, checks them, and each method is the
 * admin function of the same name without its first argument. The functions
 * that take a store (`{ db, schema }`) first stay, deprecated (deprecated.ts).
 */
import type { Db } from '../../db/pool.ts';
import { InputError } from '../../errors.ts';
import type { Schedule } from '../../config/index.ts';
import { listQueues, pauseQueue, resumeQueue, type QueueInfo } from '../pause.ts';
import type { Now, Store } from '../sql.ts';
import { cancelJobs, deleteJobs, retryJobs, runJobsNow } from './actions.ts';
import { deadLetterGroups, type DeadLetterGroup } from './dead_letters.ts';
import { getJob } from './job.ts';
import { countJobs, listJobs } from './list.ts';
import { overview, type Overview } from './overview.ts';
import { scheduleSummaries, type ScheduleSummary } from './schedules.ts';
import { stats, type Stats } from './stats.ts';
import { listSupervisors } from './supervisors.ts';
import { throughput, type ThroughputBucket } from './throughput.ts';
import type { BulkAction, BulkOptions, BulkResult, BulkTarget, JobDetail, JobFilter, JobRow, Page } from './types.ts';
import type { SupervisorRow } from './types.ts';
import { relationsOf, workflowOf, type Relations, type Workflow } from './workflow.ts';

/** What createAdmin is given. */
export interface AdminOptions {
  /** A `pg` Pool (or a Client, such as one inside your transaction) it reads and writes through. */
  pool: Db;
  /** Schema of jobvisor's tables: `database.schema` (default "jobvisor"). */
  schema?: string;
  /**
   * A bound on each statement, in milliseconds, set for the statement's own
   * transaction (so it holds through a pooler too). Default: the session's.
   */
  statementTimeoutMs?: number;
}

/**
 * The admin API on one pool: what `jobvisor jobs …`, `stats`, `queues` and the
 * dashboard use. Reads are shaped to stay fast on millions of rows; a text
 * search of payloads is a full scan, so give the handle a `statementTimeoutMs`.
 * Every method checks its input first and throws InputError, writing nothing.
 */
export interface Admin {
  /** Keyset pages of jobs, newest first: `{ jobs, next, prev }`, the cursors of the older and the newer page. */
  listJobs(filter: JobFilter, page: Page): Promise<{ jobs: JobRow[]; next: string | null; prev: string | null }>;
  /** Counts the jobs that match, at most `cap` (10,000); with `action`, only those it would change. */
  countJobs(filter: JobFilter, cap?: number, action?: BulkAction): Promise<{ count: number; capped: boolean }>;
  /** One job with its error history and timeline, or null. */
  getJob(id: string): Promise<JobDetail | null>;
  /** Counts by queue, kind and status, the oldest pending age and the live supervisors (`jobvisor stats`). */
  stats(now?: Now, options?: { all?: boolean }): Promise<Stats>;
  /** The dashboard's overview: queues, statuses, supervisors. */
  overview(now?: Now, options?: { cap?: number }): Promise<Overview>;
  /** Jobs done and dead-lettered per time bucket over the last hour or day (the dashboard's chart). */
  throughput(range: 'hour' | 'day', now?: Date): Promise<ThroughputBucket[]>;
  /** Dead letters grouped by kind and by the first line of their error. */
  deadLetterGroups(options?: { limit?: number }): Promise<DeadLetterGroup[]>;
  /** The live supervisors. */
  listSupervisors(now?: Now): Promise<SupervisorRow[]>;
  /** Each schedule's last and next fire times. */
  scheduleSummaries(schedules: Schedule[], now?: Date, count?: number): Promise<ScheduleSummary[]>;
  /** A job's workflow parents and children. */
  relationsOf(id: string, limit?: number): Promise<Relations>;
  /** The whole workflow a job belongs to. */
  workflowOf(id: string, limit?: number): Promise<Workflow>;
  /** Failed and cancelled jobs (`{ ids }` or `{ filter }`) back to pending, attempts 0, due now, in batches: `{ matched, changed }`. */
  retryJobs(target: BulkTarget, options?: BulkOptions): Promise<BulkResult>;
  /** Pending, running, blocked and waiting jobs to cancelled (a running one is aborted at its supervisor's next heartbeat). */
  cancelJobs(target: BulkTarget, options?: BulkOptions): Promise<BulkResult>;
  /** Pending jobs not yet due become due now; a waiting job's wait times out now. */
  runJobsNow(target: BulkTarget, options?: BulkOptions): Promise<BulkResult>;
  /** Deletes jobs that are not running; `force` also deletes a workflow parent and cancels its dependents. */
  deleteJobs(target: BulkTarget, options?: BulkOptions & { force?: boolean }): Promise<BulkResult>;
  /** Pauses a queue cluster-wide (running jobs finish). */
  pauseQueue(queue: string): Promise<void>;
  /** Resumes a paused queue. */
  resumeQueue(queue: string): Promise<void>;
  /** Every queue with its pending, running and blocked counts and whether it is paused. */
  listQueues(): Promise<QueueInfo[]>;
}

/**
 * The admin API on one handle: give it the pool once, then call
 * `admin.listJobs(filter, page)`, `admin.retryJobs({ ids })`, …. It opens no
 * connection and starts nothing; the pool stays yours to end.
 *
 * @param options The pool, and optionally the schema and a statement bound.
 * @returns The admin API bound to that pool.
 * @throws InputError (code INPUT_INVALID) when `pool` is not a pg Pool or
 *   Client, `schema` not a lower-case SQL identifier, or `statementTimeoutMs`
 *   not a positive whole number.
 *
 * @example
 * ```ts
 * const admin = createAdmin({ pool, statementTimeoutMs: 5_000 });
 * const { jobs } = await admin.listJobs({ status: 'failed' }, { limit: 50 });
 * await admin.retryJobs({ ids: jobs.map((job) => job.id) });
 * ```
 */
export function createAdmin(options: AdminOptions): Admin {
  const store = checkedStore(options);
  const db = store.db;
  const schema = { schema: store.schema };
  return {
    listJobs: (filter, page) => listJobs(store, filter, page),
    countJobs: (filter, cap, action) => countJobs(store, filter, cap, action),
    getJob: (id) => getJob(store, id),
    stats: (now, o) => stats(store, now, o),
    overview: (now, o) => overview(store, now, o),
    throughput: (range, now) => throughput(store, range, now),
    deadLetterGroups: (o) => deadLetterGroups(store, o),
    listSupervisors: (now) => listSupervisors(store, now),
    scheduleSummaries: (schedules, now, count) => scheduleSummaries(store, schedules, now, count),
    relationsOf: (id, limit) => relationsOf(store, id, limit),
    workflowOf: (id, limit) => workflowOf(store, id, limit),
    retryJobs: (target, o) => retryJobs(store, target, o),
    cancelJobs: (target, o) => cancelJobs(store, target, o),
    runJobsNow: (target, o) => runJobsNow(store, target, o),
    deleteJobs: (target, o) => deleteJobs(store, target, o),
    pauseQueue: (queue) => pauseQueue(db, queue, schema),
    resumeQueue: (queue) => resumeQueue(db, queue, schema),
    listQueues: () => listQueues(db, schema),
  };
}

function checkedStore(options: AdminOptions): Store {
  if (typeof options !== 'object' || options === null)
    throw new InputError('createAdmin: give it options: { pool, schema?, statementTimeoutMs? }');
  const { pool, schema = 'jobvisor', statementTimeoutMs } = options;
  if (typeof pool !== 'object' || pool === null || typeof (pool as { query?: unknown }).query !== 'function')
    throw new InputError(`createAdmin: pool must be a pg Pool or Client, got ${describe(pool)}`);
  if (typeof schema !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    throw new InputError(`createAdmin: schema must be a lower-case SQL identifier, got ${describe(schema)}`);
  if (statementTimeoutMs !== undefined && !(Number.isInteger(statementTimeoutMs) && statementTimeoutMs > 0))
    throw new InputError(
      `createAdmin: statementTimeoutMs must be a positive whole number of milliseconds, got ${describe(statementTimeoutMs)}`,
    );
  return { db: pool, schema, ...(statementTimeoutMs !== undefined && { statementTimeoutMs }) };
}

function describe(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? String(value);
  return `an object without query()`;
}
