/**
 * The reaper and cleanup loops (cleanup first rolls up the finished jobs of
 * the minutes that ended, for the dashboard's charts, then deletes). Both
 * work in batches and repeat while a batch comes back full: the reaper up to
 * 20 batches per round, cleanup until its
 * time budget (half its interval) is spent, so a backlog of any size shrinks
 * every round and a round still ends before the next one is due. A cleanup
 * round that spent its budget with rows left is followed by the next after a
 * tenth of the interval, not a whole one: with the whole interval, cleanup
 * deleted for a third of the time at most, and a 500,000-row backlog at
 * `cleanup.interval` 2s was gone 23.6 s after the supervisor's start (12.5 s
 * on a quieter machine, load 5); it is the rate above which the table grows.
 *
 * A reaper batch the database refuses for a reason other than the connection
 * (one malformed row, a user's trigger) is split until the bad row is alone;
 * that row is dead-lettered by itself and the other expired leases are
 * returned as usual. A row whose fallback fails too is skipped by later split
 * rounds of this supervisor, so it cannot stop reaping anywhere. Each round
 * first finishes cancelled rows whose run's lease ran out (cancelled_slot.ts),
 * and last wakes waiting jobs whose deadline has passed (queue/wait.ts): a
 * ctx.waitFor timeout is noticed within one reaper.interval.
 */
import type { Settings } from '../../config/index.ts';
import { finishStaleCancelled } from '../../queue/cancelled_slot.ts';
import { deleteOldJobs } from '../../queue/cleanup.ts';
import { deleteOldMinutes, rollUpFinished } from '../../queue/finished_rollup.ts';
import { settleStragglers } from '../../queue/settle.ts';
import { deadLetterExpired } from '../../queue/fallback.ts';
import { expireSupervisors } from '../../queue/presence.ts';
import { listExpiredLeases, reapExpiredLeases, reapLeases, type ReapedJob } from '../../queue/reaper.ts';
import type { Store } from '../../queue/sql.ts';
import { wakeTimedOutWaits } from '../../queue/wait.ts';
import type { SupervisorEvents } from '../events.ts';
import { NO_HOOKS, reportDbError, type Hooks } from '../hooks.ts';
import { Loop, reportedAs } from './loop.ts';
import { safeEmit } from '../safe_emit.ts';
import { shortMessageOf } from '../complete/error_text.ts';
import { keepsBatch, writeSplitting } from '../complete/split_write.ts';

const MAX_REAP_BATCHES_PER_ROUND = 20;
/** Rows the reaper's split path has given up on, remembered at most. */
const MAX_SKIPPED = 1000;

export function createReaper(
  store: Store,
  settings: Settings['reaper'],
  events: SupervisorEvents,
  hooks: Hooks = NO_HOOKS,
): Loop {
  const skipped = new Set<string>();
  return new Loop({
    name: 'reaper',
    intervalMs: settings.interval,
    run: async () => {
      await finishStaleCancelled(store, settings.batchSize);
      await settleStragglers(store, settings.batchSize);
      await reapRound(store, settings, skipped, events, hooks);
      await wakeTimedOut(store, settings.batchSize, events);
    },
    ...reportedAs(events, 'reaper', hooks),
  });
}

/** Expired leases, in batches (at most MAX_REAP_BATCHES_PER_ROUND). */
async function reapRound(
  store: Store,
  settings: Settings['reaper'],
  skipped: Set<string>,
  events: SupervisorEvents,
  hooks: Hooks,
): Promise<void> {
  for (let i = 0; i < MAX_REAP_BATCHES_PER_ROUND; i++) {
    let jobs: ReapedJob[];
    try {
      jobs = await reapExpiredLeases(store, settings.batchSize);
    } catch (err) {
      if (keepsBatch(err)) throw err;
      reportDbError(hooks, events, 'reaper', err);
      jobs = await reapSplitting(store, settings.batchSize, skipped, events, hooks);
      if (jobs.length > 0) safeEmit(events, 'lease:reaped', { jobs });
      return;
    }
    if (jobs.length > 0) safeEmit(events, 'lease:reaped', { jobs });
    if (jobs.length < settings.batchSize) return;
  }
}

/** Waits whose deadline has passed back to pending, in batches (as many as reapRound's). */
async function wakeTimedOut(store: Store, limit: number, events: SupervisorEvents): Promise<void> {
  for (let i = 0; i < MAX_REAP_BATCHES_PER_ROUND; i++) {
    const jobs = await wakeTimedOutWaits(store, limit);
    if (jobs.length > 0) safeEmit(events, 'wait:timedOut', { jobs });
    if (jobs.length < limit) return;
  }
}

/** The reaper's split path: reap expired ids, isolating and dead-lettering rows that fail. */
async function reapSplitting(
  store: Store,
  limit: number,
  skipped: Set<string>,
  events: SupervisorEvents,
  hooks: Hooks,
): Promise<ReapedJob[]> {
  const ids = await listExpiredLeases(store, limit, [...skipped]);
  const reaped: ReapedJob[] = [];
  const result = await writeSplitting(ids.length, {
    write: async (lo, hi) => void reaped.push(...(await reapLeases(store, ids.slice(lo, hi)))),
    alone: async (i, err) => {
      const row = await deadLetterExpired(
        store,
        ids[i] as string,
        `lease expired, and returning the job failed (${shortMessageOf(err)}), so it was dead-lettered alone`,
      );
      if (row) reaped.push(row);
    },
  });
  for (const { index, err } of result.abandoned) {
    if (skipped.size >= MAX_SKIPPED) skipped.clear();
    skipped.add(ids[index] as string);
    reportDbError(hooks, events, 'reaper', err);
  }
  if (result.retryError !== undefined) {
    if (reaped.length > 0) safeEmit(events, 'lease:reaped', { jobs: reaped });
    throw result.retryError as Error;
  }
  return reaped;
}

/**
 * A cleanup round: first the per-minute rollup of finished jobs, so the rows
 * about to be deleted are counted for the dashboard's charts before they go
 * (queue/finished_rollup.ts says which rows it cannot count), then the
 * deletes, then the rollup's minutes older than it keeps. The rollup and the
 * deletes share the round's budget; the deletes run at least one batch. A
 * failing rollup is reported as loop `rollup` (best effort: counted and
 * logged, never a reason to be unready) and never stops the deletes: a
 * table that keeps growing is worse than a chart that misses some rows.
 */
export function createCleanup(
  store: Store,
  settings: Settings['cleanup'],
  events: SupervisorEvents,
  hooks: Hooks = NO_HOOKS,
): Loop {
  return new Loop({
    name: 'cleanup',
    intervalMs: settings.interval,
    moreDelayMs: Math.max(1, Math.floor(settings.interval / 10)),
    run: async () => {
      await expireSupervisorRows(store);
      const deadline = Date.now() + cleanupBudgetMs(settings.interval);
      const rollupFailed = (err: unknown) => reportDbError(hooks, events, 'rollup', err);
      const rolled = await rollUpRound(store, deadline)
        .catch(unlessUnmigrated('busy' as const))
        .catch(rollupFailed);
      const deleted = await deleteRound(store, settings, events, deadline);
      await deleteOldMinutes(store).catch(unlessUnmigrated(0)).catch(rollupFailed);
      return rolled === 'more' || deleted === 'more' ? 'more' : undefined;
    },
    ...reportedAs(events, 'cleanup', hooks),
  });
}

async function deleteRound(
  store: Store,
  settings: Settings['cleanup'],
  events: SupervisorEvents,
  deadline: number,
): Promise<'more' | undefined> {
  for (;;) {
    const rows = await deleteOldJobs(store, {
      retentionMs: settings.retention,
      failedRetentionMs: settings.failedRetention,
      limit: settings.batchSize,
    });
    if (rows.length > 0) safeEmit(events, 'jobs:cleaned', { rows });
    if (rows.reduce((n, r) => n + r.count, 0) < settings.batchSize) return undefined;
    if (Date.now() >= deadline) return 'more';
  }
}

/**
 * Rollup statements until the watermark has caught up ('done'), the deadline
 * (a `Date.now()` time) has passed with minutes left ('more'), or another
 * supervisor holds the watermark ('busy': its rollup is counting them).
 */
export async function rollUpRound(store: Store, deadline: number): Promise<'done' | 'more' | 'busy'> {
  for (;;) {
    const step = await rollUpFinished(store);
    if (step === null) return 'busy';
    if (step.caughtUp) return 'done';
    if (Date.now() >= deadline) return 'more';
  }
}

/**
 * Deletes the supervisors table's rows of supervisors that stopped beating
 * (readers skip them already; this keeps the table small). A database not yet
 * migrated to that table is not an error of cleanup.
 */
async function expireSupervisorRows(store: Store): Promise<void> {
  await expireSupervisors(store).catch(unlessUnmigrated(undefined));
}

/** A handler that answers `value` for a table not created yet (a database not yet migrated), rethrows the rest. */
function unlessUnmigrated<T>(value: T): (err: unknown) => T {
  return (err) => {
    if ((err as { code?: string } | undefined)?.code !== UNDEFINED_TABLE) throw err;
    return value;
  };
}

const UNDEFINED_TABLE = '42P01';

/**
 * How long one cleanup round may keep deleting: half its interval. The other
 * half leaves the database to claims and completions, and a round always ends
 * before the next one is due.
 */
export function cleanupBudgetMs(intervalMs: number): number {
  return Math.max(1, Math.floor(intervalMs / 2));
}
