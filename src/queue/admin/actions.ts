/**
 * Operator actions on jobs, by ids or by filter: retry, cancel, run now, delete.
 *
 * Every action walks its target in keyset batches (id DESC, `batchSize` rows,
 * default 1,000): one statement finds the next batch of candidates, a second
 * changes them by id, each its own short transaction. Re-queueing a million
 * dead letters in one statement held its row locks for 9.4 s and then woke
 * every supervisor for a million jobs at once; batches keep locks short, let
 * the fleet start on the first ones, and let an operator stop a long run.
 * The walk only moves down the ids, so it ends even when changed rows come
 * back into the filter (a retried job that fails again).
 *
 * The change re-checks the whole filter, with the action's statuses, under the
 * row lock, taken in id order (so two bulk actions cannot deadlock each
 * other): a job that moved on between the two statements (claimed, finished,
 * retried or cancelled by another action) is counted as matched, not changed.
 *
 * Which jobs an action applies to:
 *   retry   failed, cancelled → pending; attempts 0, due now. Done jobs are
 *           not re-run: that would be a new job, and their handlers may not
 *           expect a second success.
 *   cancel  pending, running → cancelled. A running job's claim is taken
 *           away: its supervisor's next heartbeat finds it lost and aborts the
 *           task, and every write of that run is fenced off by its token. It
 *           keeps its lease and no finished_at until that run has ended, so on
 *           a limited queue it holds its slot meanwhile (cancelled_slot.ts).
 *   runNow  pending and not yet due → due now (and its queue is notified).
 *   delete  anything but running: a running job's supervisor still owns it;
 *           cancel it first, and delete it once it is cancelled.
 */
import { planned, run, type Store } from '../sql.ts';
import { DROP_DELETED_EDGES, NO_LIVE_DEPENDENTS, REBLOCK_RETRIED, SETTLE_CANCELLED } from './graph_actions.ts';
import { FILTER_PARAMS, FILTER_WHERE, filterParams } from './filter.ts';
import {
  ACTION_STATUSES,
  type BulkAction,
  type BulkOptions,
  type BulkResult,
  type BulkTarget,
  type JobStatus,
} from './types.ts';

/** Rows per statement of a bulk action by default. */
export const BULK_BATCH_SIZE = 1000;

const NEXT_BATCH = planned(
  'admin_next_batch',
  `
SELECT id FROM jobvisor.jobs
 WHERE ${FILTER_WHERE}
   AND ($${FILTER_PARAMS + 1}::bigint IS NULL OR id < $${FILTER_PARAMS + 1})
 ORDER BY id DESC
 LIMIT $${FILTER_PARAMS + 2}`,
);

/**
 * The rows of one batch that still match the action's filter, locked in id
 * order. The whole filter, with the action's statuses, is checked again here:
 * FOR UPDATE re-evaluates it on the row's newest version after waiting for a
 * concurrent writer, so a job that another action or a supervisor moved out
 * of the filter since the batch was picked (a dead letter just retried, a
 * pending job just claimed) is left alone. Checking only `status <> 'running'`
 * let `jobs delete --failed` delete jobs that `jobs retry --failed` had just
 * re-queued: 5,022 of 20,000 in one run.
 */
const LOCKED_MATCHES = `SELECT id FROM jobvisor.jobs
 WHERE id = ANY($${FILTER_PARAMS + 1}::bigint[]) AND ${FILTER_WHERE}`;
const LOCK_BATCH = `${LOCKED_MATCHES}
 ORDER BY id FOR UPDATE`;
/** run-now: only jobs not yet due. */
const LOCK_BATCH_NOT_DUE = `${LOCKED_MATCHES} AND run_at > now()
 ORDER BY id FOR UPDATE`;

const RETRY = planned(
  'admin_retry',
  `
WITH t AS (${LOCK_BATCH}), u AS (
UPDATE jobvisor.jobs AS j
   SET status = CASE WHEN j.parents_waiting IS NULL THEN 'pending' ELSE 'blocked' END,
       attempts = 0, snoozes = 0, run_at = now(), finished_at = NULL, locked_until = NULL
  FROM t
 WHERE j.id = t.id
RETURNING j.id, j.queue, j.parents_waiting IS NOT NULL AS child
), ${REBLOCK_RETRIED}`,
);

const CANCEL = planned(
  'admin_cancel',
  `
WITH t AS (${LOCK_BATCH}), u AS (
UPDATE jobvisor.jobs AS j
   SET status = 'cancelled',
       finished_at = CASE WHEN j.status = 'running' THEN NULL ELSE now() END,
       locked_until = CASE WHEN j.status = 'running' THEN j.locked_until END
  FROM t
 WHERE j.id = t.id
RETURNING j.id, j.queue, j.has_dependents
), ${SETTLE_CANCELLED}`,
);

// A pending job: run_at only; the status does not change, so the re-queue
// trigger stays silent and the caller notifies the queues itself
// (NOTIFY_QUEUES). A waiting job (ctx.waitFor): its wait times out now, so
// the run that follows resolves it to { received: false } (unless its signal
// commits first); the wait's recorded deadline moves to now with it, since the
// run decides the timeout from that record (queue/steps.ts). A sleeping job
// (pending, due at its wake time): its sleeps not yet over end now, their
// recorded wake times moved to now, since the run that follows decides from
// those records whether each sleep is over (worker/steps.ts); without it the
// run went back to sleep until the same time. Only rows flagged has_steps
// probe job_steps.
const RUN_NOW = planned(
  'admin_run_now',
  `
WITH t AS (${LOCK_BATCH_NOT_DUE}), u AS (
UPDATE jobvisor.jobs AS j
   SET run_at = now(),
       status = CASE WHEN j.status = 'waiting' THEN 'pending' ELSE j.status END,
       waiting_for = NULL
  FROM t
 WHERE j.id = t.id
RETURNING j.id, j.queue, j.has_steps, (SELECT w.waiting_for FROM jobvisor.jobs AS w WHERE w.id = t.id) AS waited
), w AS (
UPDATE jobvisor.job_steps AS s SET wake_at = now()
  FROM u
 WHERE u.waited IS NOT NULL AND s.job_id = u.id AND s.name = u.waited AND s.kind = 'wait' AND s.finished_at IS NULL
), sl AS (
UPDATE jobvisor.job_steps AS s SET wake_at = now()
 WHERE s.job_id = ANY (ARRAY(SELECT u.id FROM u WHERE u.has_steps AND u.waited IS NULL))
   AND s.kind = 'sleep' AND s.wake_at > now()
)
SELECT id, queue FROM u`,
);

const DELETE = planned(
  'admin_delete',
  `
WITH t AS (${LOCK_BATCH}), gone AS (
DELETE FROM jobvisor.jobs AS j
 USING t
 WHERE j.id = t.id AND ${NO_LIVE_DEPENDENTS}
RETURNING j.id, j.queue, j.has_dependents, j.parents_waiting IS NOT NULL AS child, j.has_steps
), ${DROP_DELETED_EDGES}`,
);

const DELETE_FORCE = planned(
  'admin_delete_force',
  `
WITH t AS (${LOCK_BATCH}), gone AS (
DELETE FROM jobvisor.jobs AS j
 USING t
 WHERE j.id = t.id
RETURNING j.id, j.queue, j.has_dependents, j.parents_waiting IS NOT NULL AS child, j.has_steps
), ${DROP_DELETED_EDGES}`,
);

const NOTIFY_QUEUES = planned(
  'admin_notify_queues',
  `SELECT count(pg_notify('jobvisor_jobs', q)) FROM unnest($1::text[]) AS q`,
);

interface Action {
  statuses: readonly JobStatus[];
  change: ReturnType<typeof planned>;
  notify: boolean;
}

const ACTIONS = {
  retry: { statuses: ACTION_STATUSES.retry, change: RETRY, notify: false },
  cancel: { statuses: ACTION_STATUSES.cancel, change: CANCEL, notify: false },
  runNow: { statuses: ACTION_STATUSES.runNow, change: RUN_NOW, notify: true },
  delete: { statuses: ACTION_STATUSES.delete, change: DELETE, notify: false },
} satisfies Record<BulkAction, Action>;
const FORCED_DELETE: Action = { ...ACTIONS.delete, change: DELETE_FORCE };

async function bulk(store: Store, action: Action, target: BulkTarget, options: BulkOptions = {}): Promise<BulkResult> {
  const byIds = 'ids' in target;
  const filter = byIds ? { ids: target.ids } : target.filter;
  const params = filterParams(filter, action.statuses);
  if (byIds && target.ids.length === 0) return { matched: 0, changed: 0, ids: [] };
  const batchSize = Math.max(1, Math.floor(options.batchSize ?? BULK_BATCH_SIZE));
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const changedIds: string[] = [];
  let matched = 0;
  let changed = 0;
  let cursor: string | null = null;
  while (changed < limit) {
    const size = Math.min(batchSize, limit - changed);
    const batch = (await run<{ id: string }>(store, NEXT_BATCH, [...params, cursor, size])).map((r) => r.id);
    if (batch.length === 0) break;
    matched += batch.length;
    cursor = batch[batch.length - 1] as string;
    const rows = await changeBatch(store, action, [...params, batch]);
    changed += rows.length;
    if (action.notify && rows.length > 0) await run(store, NOTIFY_QUEUES, [[...new Set(rows.map((r) => r.queue))]]);
    const ids = rows.map((r) => r.id);
    if (byIds) changedIds.push(...ids);
    options.onBatch?.(ids);
    if (batch.length < size) break;
  }
  return byIds ? { matched, changed, ids: changedIds } : { matched, changed };
}

/** Lock conflicts a batch is simply written again after: it changes nothing when it fails. */
const CONFLICTS = new Set(['40P01', '40001']);
const CONFLICT_TRIES = 3;

/**
 * One batch's change. A deadlock with a supervisor's batched write (it locks
 * its rows in its own order) aborts only this batch's transaction: try again.
 */
async function changeBatch(
  store: Store,
  action: Action,
  values: unknown[],
): Promise<Array<{ id: string; queue: string }>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run<{ id: string; queue: string }>(store, action.change, values);
    } catch (err) {
      if (attempt >= CONFLICT_TRIES || !CONFLICTS.has((err as { code?: string } | undefined)?.code ?? '')) throw err;
    }
  }
}

/** Failed and cancelled jobs back to pending, attempts 0, due now. */
export function retryJobs(store: Store, target: BulkTarget, options?: BulkOptions): Promise<BulkResult> {
  return bulk(store, ACTIONS.retry, target, options);
}

/** Pending and running jobs to cancelled (a running one is aborted at its supervisor's next heartbeat). */
export function cancelJobs(store: Store, target: BulkTarget, options?: BulkOptions): Promise<BulkResult> {
  return bulk(store, ACTIONS.cancel, target, options);
}

/** Pending jobs not yet due become due now. */
export function runJobsNow(store: Store, target: BulkTarget, options?: BulkOptions): Promise<BulkResult> {
  return bulk(store, ACTIONS.runNow, target, options);
}

/**
 * Deletes jobs that are not running (a running job is never deleted: cancel it
 * first). A workflow parent whose dependents have not finished is left alone
 * unless `force`; forced, its blocked dependents are cancelled (cascading).
 */
export function deleteJobs(
  store: Store,
  target: BulkTarget,
  options?: BulkOptions & { force?: boolean },
): Promise<BulkResult> {
  return bulk(store, options?.force ? FORCED_DELETE : ACTIONS.delete, target, options);
}

/**
 * Retries dead letters (of `kind`, if given), at most `limit`, in statements
 * of `batchSize` rows; `jobs retry --failed`.
 * @returns how many were retried.
 */
export async function retryFailedInBatches(
  store: Store,
  options: { kind?: string } & BulkOptions = {},
): Promise<number> {
  const { kind, ...bulkOptions } = options;
  return (await retryJobs(store, { filter: { status: 'failed', kind } }, bulkOptions)).changed;
}
