/**
 * Claiming from a limited queue: one short transaction that takes the queue's
 * advisory lock, then claims with the statement of claim_limited_sql.ts.
 *
 * Why a lock and a second statement: under READ COMMITTED a statement's
 * snapshot is taken when it starts, so a lock taken inside the claim statement
 * would still count slots as they were before the previous holder committed.
 * Taken by the statement before, the claim's snapshot sees every earlier claim
 * of the queue. The lock is transaction-scoped: a supervisor killed mid-claim
 * loses it with its connection, and its claim rolls back.
 *
 * One lock per queue serializes the queue's claims across the cluster (not its
 * runs): each claim holds it for one statement, about a millisecond, and takes
 * a batch, so a limited queue still claims thousands of jobs a second. Four
 * round trips (BEGIN, lock, claim, COMMIT): the lock's key is a parameter,
 * never spliced into the text.
 */
import type { QueueSettings } from '../config/index.ts';
import { withConnection } from '../db/borrow.ts';
import { claimedJob, type ClaimRow } from './claim.ts';
import { CLAIM_KEY_LIMITED, CLAIM_QUEUE_LIMITED } from './claim_limited_sql.ts';
import { PACING_HORIZON_MS, RATE_START_DELAY_MS, rateWindowMs } from './rate_slots.ts';
import { NO_JIT, type Now, type Store } from './sql.ts';
import type { ClaimedJob } from './types.ts';

export { PACING_HORIZON_MS, RATE_START_DELAY_MS, rateWindowMs, startToleranceMs } from './rate_slots.ts';

/** Advisory lock namespace of limited claims (the first key of pg_advisory_xact_lock(int, int)). */
const LOCK_SPACE = 0x6a76_0006;
/**
 * A per-key claim told to look in a window (`keylessScan: 'window'`) looks for
 * jobs without a key among the queue's first this-many due jobs, whatever
 * their key, instead of all of them (claim_limited_sql.ts says why).
 */
export const KEYLESS_WINDOW = 1000;

/**
 * The claim may be forgotten in a crash, like a plain claim (claim.ts says why).
 * No JIT: a per-key claim over a large backlog is estimated well above
 * jit_above_cost, and compiling it took about 40 ms of a claim that runs in 4,
 * on every claim, under the queue's lock.
 */
const BEGIN = `BEGIN; SET LOCAL synchronous_commit = off; ${NO_JIT}`;
/** With synchronous standbys the claim commits durably (claim.ts says why). */
const BEGIN_DURABLE = `BEGIN; ${NO_JIT}`;
const LOCK_QUEUE = 'SELECT pg_advisory_xact_lock($1::int, $2::int)';

export interface LimitedClaim {
  jobs: ClaimedJob[];
  /** False when the cluster limits left fewer places than asked: more may wait. */
  full: boolean;
  /** What the limits allowed this time (≤ the places asked for). */
  budget: number;
  /** When a full queue-wide rate window frees a start (ms from now; null: not rate-bound). */
  nextFreeMs: number | null;
  /** Where the next per-key walk starts (null: from the first key). */
  cursor: string | null;
  /** Keys with pending jobs were left unserved (at their limit, or not yet due): try again later. */
  keysWaiting: boolean;
  /** When each job (same order) is to start, ms since the epoch by the database's clock. */
  startAtMs: number[];
  /** A window read found it full and held fewer jobs without a key than asked: more may lie beyond it. */
  keylessHidden: boolean;
  /** The database's clock at the claim, beside the local clock around its round trip (db_clock.ts). */
  clock: ClockSample | null;
}

/**
 * One exchange with the database's clock, as NTP reads it: the claim was sent
 * at `sentMs` and its answer received at `receivedMs` by the local clock; the
 * database received it at `dbReceivedMs` (statement_timestamp()) and answered
 * at `dbRepliedMs` (clock_timestamp() of its last row), by its own clock.
 */
export interface ClockSample {
  sentMs: number;
  dbReceivedMs: number;
  dbRepliedMs: number;
  receivedMs: number;
}

export interface LimitedClaimArgs {
  owner: string;
  queue: string;
  limit: number;
  leaseMs: number;
  maxPayloadBytes: number;
  limits: Pick<QueueSettings, 'globalConcurrency' | 'perKeyConcurrency' | 'rateLimit'>;
  /** The per-key walk's cursor from the previous claim. */
  cursor?: string | null;
  /**
   * Per-key claims: where to look for jobs without a key. 'all' (the default)
   * reads every due job of the queue; 'window' only the first KEYLESS_WINDOW.
   */
  keylessScan?: 'all' | 'window';
  now?: Now;
  /** Commit with the session's synchronous_commit (synchronous standbys), not off. */
  durable?: boolean;
  /** The local clock the result's `clock` sample is read with (ms since the epoch; default Date.now). */
  clock?: () => number;
}

/** A claimed row (id null: nothing claimed, the limits ride along alone). */
interface Row extends Omit<ClaimRow, 'id'> {
  id: string | null;
  budget: number;
  next_free_ms: string | null;
  db_received_ms: string;
  db_replied_ms: string;
  start_at_ms: string | null;
  key_index?: number | null;
  key?: string | null;
  last_key?: string | null;
  keys_visited?: number;
  keyless_hidden?: boolean;
}

/**
 * Claims up to `limit` due jobs of a limited queue, as many as its cluster-wide
 * limits leave. Jobs over a limit stay pending with their attempts untouched.
 * @throws the database's error; the transaction is rolled back and nothing is claimed.
 */
export async function claimLimited(store: Store, args: LimitedClaimArgs): Promise<LimitedClaim> {
  const none = {
    jobs: [],
    full: true,
    budget: 0,
    nextFreeMs: null,
    cursor: args.cursor ?? null,
    startAtMs: [],
    keysWaiting: false,
    keylessHidden: false,
    clock: null,
  };
  if (args.limit <= 0) return none;
  const begin = args.durable ? BEGIN_DURABLE : BEGIN;
  // The per-key claim's plan settings (SET LOCAL: until COMMIT) go with BEGIN, in its one round trip.
  const settings = perKey(args.limits) ? CLAIM_KEY_LIMITED.settings : undefined;
  const beginText = settings ? `${begin}; ${settings}` : begin;
  return withConnection(store.db, async (client) => {
    try {
      await client.query(beginText);
      await client.query(LOCK_QUEUE, [LOCK_SPACE, lockKey(store.schema, args.queue)]);
      const result = await claimLocked({ db: client, schema: store.schema }, args);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  });
}

async function claimLocked(store: Store, args: LimitedClaimArgs): Promise<LimitedClaim> {
  const { limits } = args;
  const rate = limits.rateLimit;
  const shared = (limit: number) => [
    args.owner,
    args.queue,
    args.leaseMs,
    limit,
    args.now ?? null,
    args.maxPayloadBytes,
    limits.globalConcurrency ?? null,
    limits.perKeyConcurrency ?? null,
    rate?.count ?? null,
    rate ? rateWindowMs(rate.periodMs) : null,
    rate?.perKey ?? false,
    rate ? RATE_START_DELAY_MS : 0,
    rate ? Math.min(PACING_HORIZON_MS, rateWindowMs(rate.periodMs)) : 0,
  ];
  const clock = args.clock ?? Date.now;
  const sentMs = clock();
  if (!perKey(limits)) {
    const rows = await query(store, CLAIM_QUEUE_LIMITED, shared(args.limit));
    return { ...result(rows, args.limit, 0, null), clock: sample(rows, sentMs, clock()) };
  }
  const maxKeys = Math.min(5000, 4 * args.limit + 100);
  const cursor = args.cursor ?? null;
  const window = args.keylessScan === 'window' ? KEYLESS_WINDOW : null;
  let rows = await query(store, CLAIM_KEY_LIMITED, [...shared(args.limit), cursor, maxKeys, window]);
  const out = { ...result(rows, args.limit, maxKeys, cursor), clock: sample(rows, sentMs, clock()) };
  // The walk reached the last key with room to spare: go round once more from the first.
  const visited = rows[0]?.keys_visited ?? 0;
  const left = out.budget - out.jobs.length;
  if (cursor === null || visited >= maxKeys || left <= 0) return out;
  rows = await query(store, CLAIM_KEY_LIMITED, [...shared(left), null, maxKeys, window]);
  const more = result(rows, left, maxKeys, null);
  return {
    ...more,
    jobs: [...out.jobs, ...more.jobs],
    startAtMs: [...out.startAtMs, ...more.startAtMs],
    keysWaiting: out.keysWaiting || more.keysWaiting,
    keylessHidden: out.keylessHidden || more.keylessHidden,
    budget: out.budget,
    full: out.full,
    clock: out.clock,
  };
}

function sample(rows: Row[], sentMs: number, receivedMs: number): ClockSample | null {
  const dbReceivedMs = Number(rows[0]?.db_received_ms);
  const dbRepliedMs = Math.max(...rows.map((r) => Number(r.db_replied_ms)));
  if (!Number.isFinite(dbReceivedMs) || !Number.isFinite(dbRepliedMs)) return null;
  return { sentMs, dbReceivedMs, dbRepliedMs, receivedMs };
}

/** The claim's rows as jobs, with what the limits left and where the next per-key walk starts. */
function result(rows: Row[], limit: number, maxKeys: number, cursor: string | null): Omit<LimitedClaim, 'clock'> {
  const meta = rows[0];
  const budget = meta?.budget ?? 0;
  const jobs: ClaimedJob[] = [];
  const startAtMs: number[] = [];
  let lastServed: string | null = null;
  for (const r of rows) {
    if (r.id === null) continue;
    jobs.push(claimedJob(r as ClaimRow)); // its id is not null (checked above)
    startAtMs.push(Number(r.start_at_ms));
    if (r.key !== undefined && r.key !== null) lastServed = r.key;
  }
  // Per-key: resume after the last key served when the budget ran out, else
  // after the last key visited (null once the walk reached the end).
  let next = cursor;
  if (meta?.keys_visited !== undefined) {
    const walkEnded = meta.keys_visited < maxKeys;
    next = jobs.length >= budget && lastServed !== null ? lastServed : walkEnded ? null : (meta.last_key ?? null);
  }
  return {
    jobs,
    full: budget >= limit,
    budget,
    nextFreeMs: meta?.next_free_ms === null || meta?.next_free_ms === undefined ? null : Number(meta.next_free_ms),
    cursor: next,
    startAtMs,
    keysWaiting: (meta?.keys_visited ?? 0) > 0 && jobs.length < budget,
    keylessHidden: meta?.keyless_hidden === true,
  };
}

/** Whether the claim is per key (CLAIM_KEY_LIMITED) rather than queue-wide (CLAIM_QUEUE_LIMITED). */
function perKey(limits: LimitedClaimArgs['limits']): boolean {
  return limits.perKeyConcurrency !== undefined || limits.rateLimit?.perKey === true;
}

async function query(store: Store, statement: typeof CLAIM_QUEUE_LIMITED, values: unknown[]): Promise<Row[]> {
  const { text } = statement(store.schema);
  return (await store.db.query<Row>({ text, values })).rows;
}

/** 32-bit FNV-1a of schema and queue: the second key of the queue's advisory lock. */
export function lockKey(schema: string, queue: string): number {
  let h = 0x811c9dc5;
  for (const ch of `${schema}\u0000${queue}`) {
    h ^= ch.codePointAt(0) as number;
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}
