/**
 * The start statement of this supervisor's batch calls (queue/batch_call.ts),
 * bound to its store, owner and lease. A failure (the database away) is
 * reported and answers "not known": the call starts with the leases it has,
 * its outcomes fenced as always, and the heartbeat finds what was lost.
 */
import { startBatchCall } from '../queue/batch_call.ts';
import type { Store } from '../queue/sql.ts';
import type { StartCall } from './dispatch/options.ts';
import type { SupervisorEvents } from './events.ts';
import { reportDbError, type Hooks } from './hooks.ts';

export function batchCallStarter(
  store: Store,
  owner: string,
  leaseMs: number,
  events: SupervisorEvents,
  hooks: Hooks,
): StartCall {
  return (callId, fences) =>
    startBatchCall(store, owner, callId, fences, leaseMs).catch((err: unknown) => {
      reportDbError(hooks, events, 'batch-call', err);
      return null;
    });
}
