/**
 * Runtime statements are named constants written against schema `jobvisor`.
 *
 * `planned(name, text)` is sent unnamed, so it is planned with its actual
 * parameters and the table's current size every time; `name` labels the text
 * (a comment, for pg_stat_statements and logs).
 *
 * Every statement on the hot path is `planned`. A generic plan is made once
 * and kept until the table's statistics change: the claim's, made while the
 * table was tiny, was a sequential scan and a sort, and after a burst of
 * 50,000 jobs into that table (before autovacuum analyzed it) one claim took
 * 1.4 s instead of 0.4 ms; a warm supervisor then ran a 100,000-job burst at
 * 945 jobs/s against 13,776 after ANALYZE. A custom plan sees the table's
 * current size, costs about 0.2 ms of planning per statement (not per job),
 * and cannot go stale. Array-driven statements needed it anyway: with a
 * generic plan PostgreSQL cannot see the array's size, and the fenced
 * completion of 500 jobs measured 47.7 ms generic against 10.6 ms custom.
 * test/plans.test.ts checks each hot statement's plan on a table that grew
 * from tiny to a million rows without ANALYZE.
 *
 * `planned` is the only way to define a statement, and it records it in
 * `statements` by name (a name is taken once). test/statements.test.ts
 * walks that record: every statement the project defines has a plan
 * expectation there, or the test fails.
 *
 * No statement is sent named (a `prepared()` once did it for cold ones): a
 * named statement is prepared on one server connection, and behind a pooler
 * in transaction mode (PgBouncer before 1.21 has no protocol-level support)
 * the next transaction may run on another, which has never seen it ("prepared
 * statement jobvisor_list_queues does not exist") or has it already ("already
 * exists"). The statements that used names are cold (the paused-queue read
 * once a second, admin reads): the parse a name saved is microseconds.
 */
import type pg from 'pg';
import { runScoped } from '../db/scoped_settings.ts';
import { qualify } from '../db/schema.ts';
import type { Db } from '../db/pool.ts';

export type { Db };

/** Where the jobs table lives: a pg Pool/Client and the schema name. */
export interface Store {
  db: Db;
  schema: string;
  /**
   * A bound on each statement sent through this store (the dashboard's), set
   * for the statement's transaction only (`SET LOCAL`), like a statement's own
   * settings (see `planned`): it cannot outlive the statement on a pooled
   * connection. Unset: the session's own bound (db/pool.ts), if any.
   */
  statementTimeoutMs?: number;
}

export interface Statement {
  (schema: string): { name?: string; text: string };
  /** SET LOCAL settings the statement runs under, in a transaction of its own (see `planned`). */
  readonly settings?: string;
}

/**
 * The settings of `planned(…, 'throughIndexes')` and `planned(…, 'indexWalk')`.
 * An ordered index walk takes the first N rows of an index range in index
 * order: on a table never analyzed, PostgreSQL estimated 625 of 500,000
 * expired rows, read them all through a bitmap and sorted them on disk to keep
 * 1,000 (314 ms, against 9 ms for 5,000 by the walk).
 *
 * Both also turn JIT compiling off. These statements read a range of a
 * partial index, and their cost estimates pass jit_above_cost (100,000)
 * whenever the planner's row guess is large: with 20,000 pending jobs in a
 * table of 5 M finished rows, the Overview's queue counts spent 17 ms of 23
 * compiling (63 functions) and the pending count 6 of 13; compiled code
 * never pays back on a statement that runs for milliseconds.
 */
export const NO_JIT = 'SET LOCAL jit = off';
export const THROUGH_INDEXES = `SET LOCAL enable_seqscan = off; ${NO_JIT}`;
export const AS_INDEX_WALK = `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; ${NO_JIT}`;
/**
 * `throughIndexes` for a count grouped by columns no index holds in order:
 * sorting priced out leaves the planner one way to group, a hash table of the
 * groups. With fresh statistics of 20,000 pending jobs beside 5 M finished
 * rows, the pending count chose an Index Scan, a sort of the 20,000 rows and a
 * GroupAggregate (12.7 ms) over the hashed count of the empty table (8.8 ms);
 * such a statement orders its few groups itself, since a sort left in the plan
 * would cost the price that disabling adds (see statements.test.ts, pricedOut).
 */
const HASHED_THROUGH_INDEXES = `SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off; ${NO_JIT}`;

/**
 * `throughIndexes` for a statement that reads an index range in order under a
 * LIMIT but must sort elsewhere (ORDER BY over a union, window functions):
 * bitmaps priced out, sorts left. With 20,000 due jobs of one key at its limit
 * and fresh statistics guessing 1,380, the per-key claim read them all through
 * a bitmap and kept 1,000 by a top-N sort (804 pages); walking the index in
 * order it stops at 1,000 (55 pages).
 */
const ORDERED_THROUGH_INDEXES = `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; ${NO_JIT}`;

const PLANS = {
  throughIndexes: THROUGH_INDEXES,
  indexWalk: AS_INDEX_WALK,
  hashedThroughIndexes: HASHED_THROUGH_INDEXES,
  orderedThroughIndexes: ORDERED_THROUGH_INDEXES,
};

/** Every statement defined so far, by name: its text (schema `jobvisor`) and settings. */
export const statements = new Map<string, { text: string; settings?: string }>();

/**
 * A statement. With `plan`, it always runs under the settings that leave the
 * planner only index plans (`throughIndexes`: no sequential scan) or only an
 * ordered index walk (`indexWalk`: no sequential scan, bitmap or sort), or
 * only index plans grouped by hashing (`hashedThroughIndexes`), or only
 * index plans without bitmaps (`orderedThroughIndexes`), set for the
 * statement's transaction only (db/scoped_settings.ts): for statements whose
 * plan must hold whatever the statistics say.
 */
export function planned(name: string, text: string, plan?: keyof typeof PLANS): Statement {
  return statement(name, text, plan && PLANS[plan]);
}

function statement(name: string, text: string, settings?: string): Statement {
  if (statements.has(name)) throw new Error(`statement ${name} is defined twice`);
  statements.set(name, { text, ...(settings && { settings }) });
  const cache = new Map<string, { name?: string; text: string }>();
  const get = (schema: string) => {
    let s = cache.get(schema);
    if (!s) {
      const qualified = qualify(text, schema);
      s = { text: `/* jobvisor_${name} */ ${qualified}` };
      cache.set(schema, s);
    }
    return s;
  };
  return settings ? Object.assign(get, { settings }) : get;
}

export async function run<R extends pg.QueryResultRow>(
  store: Store,
  statement: Statement,
  values: unknown[],
): Promise<R[]> {
  return send<R>(store, statement, values);
}

/**
 * `run`, each row an array of its columns in select-list order. pg builds an
 * object per row by spreading a template and setting each column by name; for a
 * 1,000-row claim that was about a quarter of the client's parsing time
 * (4.0 → 3.2 µs per row of ten columns, measured).
 */
export async function runArrays<R extends unknown[]>(
  store: Store,
  statement: Statement,
  values: unknown[],
): Promise<R[]> {
  return send<R>(store, statement, values, 'array');
}

async function send<R>(store: Store, statement: Statement, values: unknown[], rowMode?: 'array'): Promise<R[]> {
  const settings = withBound(statement.settings, store);
  if (settings) return runWith<R>(store, statement, values, settings, rowMode);
  return sendAsIs<R>(store, statement, values, rowMode);
}

/** A statement's SET LOCAL settings with the store's statement bound added, if it has one. */
function withBound(settings: string | undefined, store: Store): string | undefined {
  const ms = store.statementTimeoutMs;
  if (ms === undefined) return settings;
  // A whole number of milliseconds: the setting's integer form, safe in the text.
  const bound = `SET LOCAL statement_timeout = ${Math.max(0, Math.floor(Number(ms)))}`;
  return settings ? `${settings}; ${bound}` : bound;
}

async function sendAsIs<R>(store: Store, statement: Statement, values: unknown[], rowMode?: 'array'): Promise<R[]> {
  const { name, text } = statement(store.schema);
  const result = await store.db.query({ name, text, values, ...(rowMode && { rowMode }) });
  return result.rows as R[];
}

/** `null` lets the database use its own clock (one clock for every replica); tests pin a time. */
export type Now = Date | null;

/**
 * A PostgreSQL array literal of integers (ids are digit strings from bigint
 * columns). Built directly: pg's generic array encoding escapes each element,
 * which costs microseconds per job on the supervisor's main thread.
 */
export function intArray(values: ReadonlyArray<string | number>): string {
  return `{${values.join(',')}}`;
}

async function runWith<R>(
  store: Store,
  statement: Statement,
  values: unknown[],
  settings: string,
  rowMode?: 'array',
): Promise<R[]> {
  // SET LOCAL: the settings end with the statement's transaction (db/scoped_settings.ts).
  return runScoped(store.db, settings, (db) => sendAsIs<R>({ db, schema: store.schema }, statement, values, rowMode));
}
