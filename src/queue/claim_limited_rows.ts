/**
 * A limited claim's rows (claim_limited_sql.ts) as what claimLimited returns:
 * the jobs, what the limits allowed, where the next per-key walk starts, the
 * ended runs whose slots it found, and the clock sample. Pure.
 */
import { claimedJob, type ClaimRow } from './claim.ts';
import type { ClaimedJob } from './types.ts';

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
  /** Of the ended runs passed in, those still holding a slot: their claim tokens and keys (null: none). */
  ended: Array<{ token: string; key: string | null }>;
  /** The concurrency key of each job claimed (same order). */
  keys: Array<string | null>;
  /** How many keys the per-key walk visited (0 for a queue-wide claim). */
  keysVisited: number;
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

/** A claimed row (id null: nothing claimed, the limits ride along alone). */
export interface ClaimedRow extends Omit<ClaimRow, 'id'> {
  id: string | null;
  budget: number;
  next_free_ms: string | null;
  db_received_ms: string;
  db_replied_ms: string;
  start_at_ms: string | null;
  key: string | null;
  /** Set on one row only. */
  ended_tokens: string[] | null;
  ended_keys: Array<string | null> | null;
  key_index?: number | null;
  last_key?: string | null;
  keys_visited?: number;
  keyless_hidden?: boolean;
}

/** The sample of the database's clock that the claim's round trip took (db_clock.ts), or null. */
export function clockSample(rows: ClaimedRow[], sentMs: number, receivedMs: number): ClockSample | null {
  const dbReceivedMs = Number(rows[0]?.db_received_ms);
  const dbRepliedMs = Math.max(...rows.map((r) => Number(r.db_replied_ms)));
  if (!Number.isFinite(dbReceivedMs) || !Number.isFinite(dbRepliedMs)) return null;
  return { sentMs, dbReceivedMs, dbRepliedMs, receivedMs };
}

/**
 * The claim's rows as jobs, with what the limits left and, per key, where the
 * next walk starts (`maxKeys` 0: a queue-wide claim): after the last key
 * served (the one visited last) when the budget ran out; after the last key
 * visited when the walk stopped at `maxKeys`; else where this one started,
 * since the walk went round every key.
 */
export function claimResult(
  rows: ClaimedRow[],
  limit: number,
  cursor: string | null,
  maxKeys: number,
): Omit<LimitedClaim, 'clock'> {
  const meta = rows[0];
  const budget = meta?.budget ?? 0;
  const jobs: ClaimedJob[] = [];
  const startAtMs: number[] = [];
  const keys: Array<string | null> = [];
  let ended: LimitedClaim['ended'] = [];
  let lastServed: { key: string; i: number } | null = null;
  for (const r of rows) {
    if (r.ended_tokens) {
      const endedKeys = r.ended_keys ?? [];
      ended = r.ended_tokens.map((token, i) => ({ token, key: endedKeys[i] ?? null }));
    }
    if (r.id === null) continue;
    jobs.push(claimedJob(r as ClaimRow)); // its id is not null (checked above)
    startAtMs.push(Number(r.start_at_ms));
    keys.push(r.key);
    const i = r.key_index ?? 0;
    if (r.key !== null && i > 0 && (lastServed === null || i > lastServed.i)) lastServed = { key: r.key, i };
  }
  const keysVisited = meta?.keys_visited ?? 0;
  let next = cursor;
  if (maxKeys > 0) {
    if (jobs.length >= budget && lastServed !== null) next = lastServed.key;
    else if (keysVisited >= maxKeys) next = meta?.last_key ?? null;
  }
  return {
    jobs,
    full: budget >= limit,
    budget,
    nextFreeMs: meta?.next_free_ms === null || meta?.next_free_ms === undefined ? null : Number(meta.next_free_ms),
    cursor: next,
    startAtMs,
    keysWaiting: keysVisited > 0 && jobs.length < budget,
    keylessHidden: meta?.keyless_hidden === true,
    ended,
    keys,
    keysVisited,
  };
}
