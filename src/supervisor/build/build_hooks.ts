/**
 * The supervisor's hooks (hooks.ts), built before the parts that call them and
 * bound to parts built later through the callbacks `p` gives: what each
 * internal signal does, in one place.
 */
import type { QueueSettings } from '../../config/sections.ts';
import type { Store } from '../../queue/sql.ts';
import { cancelledRunsEnder } from '../leases/cancelled_runs.ts';
import type { SupervisorEvents } from '../events.ts';
import { reportDbError, type Hooks } from '../hooks.ts';
import { limitedWake } from '../claim/limited_wake.ts';

export function buildHooks(p: {
  store: Store;
  owner: string;
  queues: Record<string, QueueSettings>;
  events: SupervisorEvents;
  /** A queue's fetcher claims for the places freed (fetcher.onCapacity). */
  onCapacity: (queue: string) => void;
  /** A queue's fetcher claims now (fetcher.wake). */
  wake: (queue: string) => void;
  /** The primary watch's inputs (primary_watch.ts). */
  dbFailed: Hooks['dbFailed'];
  listenerReadOnly: Hooks['listenerReadOnly'];
  /** Back on a primary: LISTEN and claims now, not after their backoffs and the next poll. */
  writable: Hooks['writable'];
  /** The quiet start's clock of the last claim (quiet_start.ts). */
  claimed: Hooks['claimed'];
}): Hooks {
  const hooks: Hooks = {
    outcomeSettled: limitedWake(p.queues, p.onCapacity),
    lostRunsEnded: cancelledRunsEnder({
      store: p.store,
      owner: p.owner,
      queues: p.queues,
      onFreed: p.wake,
      onError: (err) => reportDbError(hooks, p.events, 'cancelled-runs', err),
    }),
    dbFailed: p.dbFailed,
    listenerReadOnly: p.listenerReadOnly,
    writable: p.writable,
    claimed: p.claimed,
  };
  return hooks;
}
