/**
 * A limited queue's slot is held until the run's outcome is written, and a
 * cancelled running job is no exception: its row keeps its lease until the run
 * has ended here (queue/cancelled_slot.ts). A run whose claim was lost ends
 * dropped by the dispatcher once its thread has stopped it ('lease:lost'), or
 * finished with its outcome refused by the database ('job:fenced'); either
 * way its task is over, and both call the `lostRunsEnded` hook: the row's slot
 * is given back, in one statement per turn of the event loop, and the queue
 * claims again. A write that fails leaves the slot to the lease, which the
 * heartbeat no longer renews. Unlimited queues cost a set lookup.
 */
import { isLimited, type QueueSettings } from '../../config/sections.ts';
import { endCancelledRuns } from '../../queue/cancelled_slot.ts';
import type { Store } from '../../queue/sql.ts';
import type { Hooks } from '../hooks.ts';

/** The `lostRunsEnded` hook: gives back the slots of these runs' rows if they were cancelled. */
export function cancelledRunsEnder(options: {
  store: Store;
  owner: string;
  queues: Record<string, QueueSettings>;
  onFreed: (queue: string) => void;
  onError: (err: unknown) => void;
}): Hooks['lostRunsEnded'] {
  const { store, owner } = options;
  const limited = new Set(
    Object.entries(options.queues)
      .filter(([, q]) => isLimited(q))
      .map(([name]) => name),
  );
  let ids: string[] = [];
  const write = () => {
    const batch = ids;
    ids = [];
    endCancelledRuns(store, owner, batch).then((rows) => {
      for (const queue of new Set(rows.map((r) => r.queue))) options.onFreed(queue);
    }, options.onError);
  };
  return (jobs) => {
    for (const job of jobs) {
      if (!limited.has(job.queue)) continue;
      if (ids.length === 0) setImmediate(write);
      ids.push(job.id);
    }
  };
}
