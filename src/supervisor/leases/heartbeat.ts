/**
 * The heartbeat: every lease/3, one statement renews the lease of every job
 * this supervisor holds (running, or finished with its outcome not yet written).
 * Claims the database no longer gives back were lost (reaped after a pause,
 * cancelled, re-queued): their tasks are stopped and nothing is written for them.
 *
 * Each beat also refreshes this supervisor's row in the supervisors table
 * (`beat`): best effort, after the leases; it reports its own failures and
 * never fails the round (see presence.ts).
 *
 * A failed round (the database restarting) is retried every second, not after
 * the loops' growing backoff: at 2 × lease/3 the next try would land on or past
 * the lease end, and the reapers would take back every long job in flight.
 */
import { renewLeases } from '../../queue/lease.ts';
import type { Store } from '../../queue/sql.ts';
import type { Fence } from '../../queue/types.ts';
import { Loop, reportedAs } from '../loops/loop.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';

/** Delay between heartbeat tries while the database is away. */
const RETRY_MS = 1000;

export function createHeartbeat(options: {
  store: Store;
  owner: string;
  leaseMs: number;
  held: () => Fence[];
  /** Claim tokens of the leases that were lost. */
  onLost: (tokens: string[]) => void;
  events: SupervisorEvents;
  /** Told of failed rounds (none: a loop built alone, in a test). */
  hooks?: Hooks;
  /** Records this supervisor as alive (one small statement per beat); must not throw. */
  beat?: () => Promise<void>;
}): Loop {
  return new Loop({
    name: 'heartbeat',
    intervalMs: Math.floor(options.leaseMs / 3),
    maxBackoffMs: RETRY_MS,
    run: async () => {
      const held = options.held();
      if (held.length > 0) {
        const kept = await renewLeases(options.store, options.owner, held, options.leaseMs);
        const lost = held.filter((f) => !kept.has(f.token)).map((f) => f.token);
        if (lost.length > 0) options.onLost(lost);
      }
      await options.beat?.();
    },
    ...reportedAs(options.events, 'heartbeat', options.hooks),
  });
}
