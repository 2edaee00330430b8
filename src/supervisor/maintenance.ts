/**
 * The reaper and cleanup loops. Both work in batches and repeat while a batch
 * comes back full, up to a bound per round so one round never runs long.
 */
import type { Settings } from '../config/index.ts';
import { deleteOldJobs } from '../queue/cleanup.ts';
import { reapExpiredLeases } from '../queue/reaper.ts';
import type { Store } from '../queue/sql.ts';
import type { SupervisorEvents } from './events.ts';
import { Loop } from './loop.ts';

const MAX_BATCHES_PER_ROUND = 20;

export function createReaper(store: Store, settings: Settings['reaper'], events: SupervisorEvents): Loop {
  return new Loop({
    name: 'reaper',
    intervalMs: settings.interval,
    run: async () => {
      for (let i = 0; i < MAX_BATCHES_PER_ROUND; i++) {
        const jobs = await reapExpiredLeases(store, settings.batchSize);
        if (jobs.length > 0) events.emit('lease:reaped', { jobs });
        if (jobs.length < settings.batchSize) return;
      }
    },
    onError: (err) => events.emit('db:error', { loop: 'reaper', err }),
  });
}

export function createCleanup(store: Store, settings: Settings['cleanup'], events: SupervisorEvents): Loop {
  return new Loop({
    name: 'cleanup',
    intervalMs: settings.interval,
    run: async () => {
      for (let i = 0; i < MAX_BATCHES_PER_ROUND; i++) {
        const rows = await deleteOldJobs(store, {
          retentionMs: settings.retention,
          failedRetentionMs: settings.failedRetention,
          limit: settings.batchSize,
        });
        if (rows.length > 0) events.emit('jobs:cleaned', { rows });
        if (rows.reduce((n, r) => n + r.count, 0) < settings.batchSize) return;
      }
    },
    onError: (err) => events.emit('db:error', { loop: 'cleanup', err }),
  });
}
