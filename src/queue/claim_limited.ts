/**
 * Claiming from a limited queue: one statement of claim_limited_sql.ts, which
 * takes the queue's advisory lock itself (migrations 031 and 033) and counts
 * held slots with a snapshot taken after it. The lock is transaction-scoped:
 * a supervisor killed mid-claim loses it with its connection, and its claim
 * rolls back.
 *
 * A claim that counts the whole queue (globalConcurrency, a queue-wide rate
 * limit) holds the queue's lock exclusively, which serializes those claims
 * across the cluster (not their runs) while each statement runs. A claim
 * limited per key alone holds it shared and locks only the keys it serves
 * (migration 035), so claims of several supervisors run side by side. Either claim is one round trip, its own transaction.
 * The lock's key is a parameter, never spliced into the text.
 *
 * The per-key claim used to run in a transaction that first turned JIT off
 * (BEGIN, SET LOCAL jit, the claim, COMMIT: three round trips): while the key
 * walk was part of the statement, a large backlog costed it above
 * jit_above_cost, and compiling took 40 ms of a 4-ms claim. The choice now
 * runs in key_offers(), whose statements run with JIT off whatever the
 * session says (migration 031), and what is left is costed at 55–87 (20,000
 * pending jobs over 100 keys to 1,000,000 over 10,000, analyzed or not):
 * three orders of magnitude below jit_above_cost (100,000), as the
 * queue-wide claim always was. test/db/flow_claim.test.ts checks that cost.
 */
import type { QueueSettings } from '../config/index.ts';
import { claimResult, clockSample, type ClaimedRow, type LimitedClaim } from './claim_limited_rows.ts';
import { INLINE_PAYLOAD_BYTES } from './claim.ts';
import { CLAIM_KEY_LIMITED, CLAIM_QUEUE_LIMITED } from './claim_limited_sql.ts';
import { PACING_HORIZON_MS, RATE_START_DELAY_MS, rateWindowMs } from './rate_slots.ts';
import { intArray, type Now, type Store } from './sql.ts';

export type { ClockSample, LimitedClaim } from './claim_limited_rows.ts';

export {
  maxClockErrorMs,
  MIN_START_WINDOW_MS,
  PACING_HORIZON_MS,
  RATE_START_DELAY_MS,
  rateWindowMs,
  startWindow,
  type StartWindow,
} from './rate_slots.ts';

/** Advisory lock namespace of limited claims (the first key of pg_advisory_xact_lock(int, int)). */
const LOCK_SPACE = 0x6a76_0006;
/**
 * A per-key claim told to look in a window (`keylessScan: 'window'`) looks for
 * jobs without a key among the queue's first this-many due jobs (fewer for a
 * small claim: 4 × its places + 100), whatever their key, instead of all of
 * them (claim_limited_sql.ts says why); told `none`, in none of them (a window
 * of 0: it then reports that some may lie beyond). A window costs a row each:
 * 1,000 rows cost 392 of the 2,200 pages a claim of 50 read, so the supervisor
 * skips it for a moment after one full of keyed work (supervisor/claim/keyless_reads.ts).
 */
export const KEYLESS_WINDOW = 1000;

/** Where a per-key claim looks for jobs without a key (LimitedClaimArgs.keylessScan). */
export type KeylessScan = 'all' | 'window' | 'none';

/** The window a per-key claim of `limit` places reads for jobs without a key (null: every due job). */
function keylessWindow(scan: KeylessScan | undefined, limit: number): number | null {
  if (scan === 'none') return 0;
  return scan === 'window' ? Math.min(KEYLESS_WINDOW, 4 * limit + 100) : null;
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
   * reads every due job of the queue; 'window' only the first KEYLESS_WINDOW;
   * 'none' none of them.
   */
  keylessScan?: KeylessScan;
  /** Per-key claims: how many keys to visit at most (default 4 × limit + 100, at most 5,000). */
  maxKeys?: number;
  /**
   * Runs of `owner` in this queue whose tasks have ended, outcomes not yet
   * written: their slots may go to the jobs claimed now. A run may be passed
   * to every claim until its outcome is written: once its slot went to a new
   * job, that job's row is counted, and passing it again lends nothing more.
   */
  ended?: ReadonlyArray<{ id: string; token: string }>;
  /** Per-key claims: the weight of each key named (keyWeights), and of every other key (default 1). */
  weights?: { keys: string[]; weights: number[]; other: number };
  now?: Now;
  /** Commit with the session's synchronous_commit (synchronous standbys), not off. */
  durable?: boolean;
  /** The local clock the result's `clock` sample is read with (ms since the epoch; default Date.now). */
  clock?: () => number;
}

/**
 * Claims up to `limit` due jobs of a limited queue, as many as its cluster-wide
 * limits leave. Jobs over a limit stay pending with their attempts untouched.
 * @throws the database's error; the transaction is rolled back and nothing is claimed.
 */
export async function claimLimited(store: Store, args: LimitedClaimArgs): Promise<LimitedClaim> {
  if (args.limit <= 0)
    return {
      jobs: [],
      full: true,
      budget: 0,
      nextFreeMs: null,
      cursor: args.cursor ?? null,
      startAtMs: [],
      keysWaiting: false,
      keylessHidden: false,
      clock: null,
      ended: [],
      keys: [],
      keysVisited: 0,
    };
  const { limits } = args;
  const rate = limits.rateLimit;
  const rateWindow = rate ? rateWindowMs(rate.periodMs) : null;
  const startDelay = rate ? RATE_START_DELAY_MS : 0;
  // $1–$8 of both functions (claim_limited_sql.ts).
  const head = [
    ...[args.owner, args.queue, args.leaseMs, args.limit, args.now ?? null, args.maxPayloadBytes],
    ...[INLINE_PAYLOAD_BYTES, limits.globalConcurrency ?? null],
  ];
  const lockAndEnded = [
    LOCK_SPACE,
    lockKey(store.schema, args.queue),
    intArray((args.ended ?? []).map((e) => e.id)),
    intArray((args.ended ?? []).map((e) => e.token)),
    args.durable === true,
  ];
  const clock = args.clock ?? Date.now;
  const sentMs = clock();
  if (!perKey(limits)) {
    const horizon = rateWindow === null ? 0 : Math.min(PACING_HORIZON_MS, rateWindow);
    const values = [...head, rate?.count ?? null, rateWindow, startDelay, horizon, ...lockAndEnded];
    const { text } = CLAIM_QUEUE_LIMITED(store.schema);
    const { rows } = await store.db.query<ClaimedRow>({ text, values });
    return { ...claimResult(rows, args.limit, null, 0), clock: clockSample(rows, sentMs, clock()) };
  }
  const maxKeys = args.maxKeys ?? Math.min(5000, 4 * args.limit + 100);
  const cursor = args.cursor ?? null;
  const weights = args.weights ?? { keys: [], weights: [], other: 1 };
  const values = [
    ...[...head, limits.perKeyConcurrency ?? null, rate?.count ?? null, rateWindow, rate?.perKey ?? false, startDelay],
    ...lockAndEnded,
    ...[cursor, maxKeys, keylessWindow(args.keylessScan, args.limit)],
    ...[weights.keys, weights.weights, weights.other],
  ];
  const { text } = CLAIM_KEY_LIMITED(store.schema);
  const { rows } = await store.db.query<ClaimedRow>({ text, values });
  return { ...claimResult(rows, args.limit, cursor, maxKeys), clock: clockSample(rows, sentMs, clock()) };
}

/** Whether the claim is per key (CLAIM_KEY_LIMITED) rather than queue-wide (CLAIM_QUEUE_LIMITED). */
function perKey(limits: LimitedClaimArgs['limits']): boolean {
  return limits.perKeyConcurrency !== undefined || limits.rateLimit?.perKey === true;
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
