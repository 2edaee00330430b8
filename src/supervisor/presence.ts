/**
 * This supervisor's row in the supervisors table: written at every heartbeat,
 * deleted on clean exit. Best effort: a failed write is logged once per
 * failing streak (not once per beat) and never thrown, so neither the
 * heartbeat's lease renewals nor shutdown can fail because of it, and a
 * database not yet migrated to the table costs one warning.
 */
import { hostname } from 'node:os';
import type { Logger } from '../log.ts';
import { beatSupervisor, removeSupervisor } from '../queue/admin/supervisors.ts';
import type { Store } from '../queue/sql.ts';
import { VERSION } from '../version.ts';

export interface Presence {
  beat(): Promise<void>;
  remove(): Promise<void>;
}

export function createPresence(options: {
  store: Store;
  id: string;
  queues: Record<string, number>;
  leaseMs: number;
  inFlight: () => number;
  log: Logger;
}): Presence {
  let failing = false;
  const report = (err: unknown, msg: string) => {
    if (!failing) options.log.warn({ err }, msg);
    failing = true;
  };
  return {
    async beat() {
      try {
        await beatSupervisor(options.store, {
          id: options.id,
          host: hostname(),
          pid: process.pid,
          version: VERSION,
          queues: options.queues,
          inFlight: options.inFlight(),
          leaseMs: options.leaseMs,
        });
        failing = false;
      } catch (err) {
        report(err, 'could not record this supervisor in the supervisors table');
      }
    },
    async remove() {
      try {
        await removeSupervisor(options.store, options.id);
      } catch (err) {
        report(err, 'could not remove this supervisor from the supervisors table');
      }
    },
  };
}
