/**
 * The heartbeat: every lease/3, one statement renews the lease of every job
 * this supervisor holds (running, or finished with its outcome not yet written).
 * Ids the database no longer gives back were lost (reaped after a pause,
 * cancelled): their tasks are stopped and nothing is written for them.
 *
 * A failed round (the database restarting) is retried every second, not after
 * the loops' growing backoff: at 2 × lease/3 the next try would land on or past
 * the lease end, and the reapers would take back every long job in flight.
 */
import { renewLeases } from '../queue/lease.ts';
import type { Store } from '../queue/sql.ts';
import { Loop } from './loop.ts';
import type { SupervisorEvents } from './events.ts';

/** Delay between heartbeat tries while the database is away. */
const RETRY_MS = 1000;

export function createHeartbeat(options: {
  store: Store;
  owner: string;
  leaseMs: number;
  held: () => string[];
  onLost: (ids: string[]) => void;
  events: SupervisorEvents;
}): Loop {
  return new Loop({
    name: 'heartbeat',
    intervalMs: Math.floor(options.leaseMs / 3),
    maxBackoffMs: RETRY_MS,
    run: async () => {
      const ids = options.held();
      if (ids.length === 0) return;
      const kept = await renewLeases(options.store, options.owner, ids, options.leaseMs);
      const lost = ids.filter((id) => !kept.has(id));
      if (lost.length > 0) options.onLost(lost);
    },
    onError: (err) => options.events.emit('db:error', { loop: 'heartbeat', err }),
  });
}
