/**
 * A limited queue's slot is held until the run's outcome is written, and a
 * cancelled running job is no exception: its row keeps its lease until the run
 * has ended here (queue/cancelled_slot.ts). A run whose claim was lost ends
 * with 'lease:lost' (the dispatcher dropped it once its thread had stopped it)
 * or 'job:fenced' (it finished, and the database refused its outcome); either
 * way its task is over, so the row's slot is given back, in one statement per
 * turn of the event loop, and the queue claims again. A write that fails
 * leaves the slot to the lease, which the heartbeat no longer renews.
 * Unlimited queues add no listener.
 */
import { isLimited, type QueueSettings } from '../config/sections.ts';
import { endCancelledRuns } from '../queue/cancelled_slot.ts';
import type { Store } from '../queue/sql.ts';
import type { SupervisorEvents } from './events.ts';
import { safeEmit } from './safe_emit.ts';

export function endCancelledRunsOnLoss(options: {
  store: Store;
  owner: string;
  events: SupervisorEvents;
  queues: Record<string, QueueSettings>;
  onFreed: (queue: string) => void;
}): void {
  const { store, owner, events } = options;
  const limited = new Set(
    Object.entries(options.queues)
      .filter(([, q]) => isLimited(q))
      .map(([name]) => name),
  );
  if (limited.size === 0) return;
  let ids: string[] = [];
  const write = () => {
    const batch = ids;
    ids = [];
    endCancelledRuns(store, owner, batch).then(
      (rows) => {
        for (const queue of new Set(rows.map((r) => r.queue))) options.onFreed(queue);
      },
      (err: unknown) => safeEmit(events, 'db:error', { loop: 'cancelled-runs', err }),
    );
  };
  const ended = ({ jobs }: { jobs: ReadonlyArray<{ id: string; queue: string }> }) => {
    for (const job of jobs) {
      if (!limited.has(job.queue)) continue;
      if (ids.length === 0) setImmediate(write);
      ids.push(job.id);
    }
  };
  events.on('lease:lost', ended);
  events.on('job:fenced', ended);
}
