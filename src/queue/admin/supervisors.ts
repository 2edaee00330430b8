/**
 * The live supervisors, as the operator sees them. The rows are written by
 * the supervisors themselves (../presence.ts); a row past expires_at is not
 * read, whether or not a reaper has deleted it yet.
 */
import { planned, run, type Now, type Store } from '../sql.ts';
import type { SupervisorRow } from './types.ts';

const LIST = planned(
  'supervisor_list',
  `
SELECT id, host, pid, version, queues, queue_config, started_at, heartbeat_at, in_flight, cluster_primary, cluster_slot
  FROM jobvisor.supervisors
 WHERE expires_at >= coalesce($1::timestamptz, now())
 ORDER BY host, cluster_primary NULLS FIRST, cluster_slot, started_at, id`,
);

/** The supervisors alive (not expired), by host, then a cluster primary's processes together by slot. */
export async function listSupervisors(store: Store, now: Now = null): Promise<SupervisorRow[]> {
  return run<SupervisorRow>(store, LIST, [now]);
}
