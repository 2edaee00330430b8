/**
 * This supervisor's row in the supervisors table: written at every heartbeat,
 * deleted on clean exit. Best effort: a failed write is logged once per
 * failing streak (not once per beat) and never thrown, so neither the
 * heartbeat's lease renewals nor shutdown can fail because of it, and a
 * database not yet migrated to the table costs one warning.
 */
import { hostname } from 'node:os';
import type { Logger } from '../../log.ts';
import type { QueueSettings } from '../../config/index.ts';
import { beatSupervisor, removeSupervisor, type QueueConfig } from '../../queue/presence.ts';
import type { Store } from '../../queue/sql.ts';
import { VERSION } from '../../version.ts';

export interface Presence {
  beat(): Promise<void>;
  remove(): Promise<void>;
}

/** Each queue's settings as the supervisors table records them (limits only when set). Pure. */
export function queueConfigs(queues: Record<string, QueueSettings>): Record<string, QueueConfig> {
  return Object.fromEntries(
    Object.entries(queues).map(([name, q]) => {
      const config: QueueConfig = {
        concurrency: q.concurrency,
        jobsPerThread: q.jobsPerThread,
        prefetch: q.prefetch,
        timeoutMs: q.timeout,
      };
      if (q.globalConcurrency !== undefined) config.globalConcurrency = q.globalConcurrency;
      if (q.perKeyConcurrency !== undefined) config.perKeyConcurrency = q.perKeyConcurrency;
      if (q.rateLimit !== undefined) config.rateLimit = { ...q.rateLimit };
      return [name, config];
    }),
  );
}

export function createPresence(options: {
  store: Store;
  id: string;
  queues: Record<string, number>;
  queueConfig?: Record<string, QueueConfig>;
  leaseMs: number;
  inFlight: () => number;
  log: Logger;
  cluster?: { primary: string; slot: number };
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
          queueConfig: options.queueConfig,
          inFlight: options.inFlight(),
          leaseMs: options.leaseMs,
          cluster: options.cluster,
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
