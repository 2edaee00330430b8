/**
 * The supervisor's parts, each built from the settings and the callbacks that
 * tie it to the others, and the hooks they call to drive each other
 * (build_hooks.ts; no part listens to the event map). Builders decide nothing
 * at run time; they only say which setting and which neighbour each part gets.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Piscina } from 'piscina';
import type { Settings } from '../../config/index.ts';
import { HeldConnection } from '../../db/held.ts';
import type { Store } from '../../queue/sql.ts';
import type { ClaimedJob, Fence } from '../../queue/types.ts';
import { claimStrategyFor } from '../claim/choose.ts';
import type { Dispatcher } from '../dispatch/dispatcher.ts';
import type { DispatcherOptions } from '../dispatch/options.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';
import { Fetcher } from '../claim/fetcher.ts';
import { createHeartbeat } from '../leases/heartbeat.ts';
import type { Logger } from '../../log.ts';
import type { Loop } from '../loops/loop.ts';
import { PauseWatch } from '../loops/pause_watch.ts';
import { createPresence, queueConfigs, type Presence } from '../leases/presence.ts';
import { createCleanup, createReaper } from '../loops/maintenance.ts';
import { createScheduler } from '../loops/scheduler.ts';
import { taskSources } from './task_sources.ts';
import { createThreadPool } from '../threads.ts';

/** The fallback read of paused queues when a notification is lost. */
const PAUSE_POLL_MS = 1000;

/** The owner id of this supervisor's claims: its name (or the host's), pid, and a random part. */
export function supervisorId(name: string): string {
  return `${name || hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** What the dispatcher takes from the settings. */
export function dispatcherSettings(
  settings: Settings,
  abortGraceMs: number,
): Pick<DispatcherOptions, 'queues' | 'maxThreads' | 'timeoutMs' | 'abortGraceMs' | 'maxPayloadBytes'> {
  return {
    queues: settings.queues,
    maxThreads: settings.pool.maxThreads,
    timeoutMs: settings.jobs.timeout,
    abortGraceMs,
    maxPayloadBytes: settings.jobs.maxPayloadBytes,
  };
}

/** The worker threads, each set up to load this supervisor's tasks and reach its database. */
export function buildThreads(
  settings: Settings,
  supervisor: string,
  databaseUrl: string,
  taskFiles: Record<string, string>,
): Piscina {
  return createThreadPool({
    maxThreads: settings.pool.maxThreads,
    idleTimeoutMs: settings.pool.idleTimeout,
    maxOldGenerationSizeMb: settings.pool.maxOldGenerationSizeMb,
    maxYoungGenerationSizeMb: settings.pool.maxYoungGenerationSizeMb,
    stackSizeMb: settings.pool.stackSizeMb,
    setup: {
      tasks: taskSources(settings, taskFiles),
      databaseUrl,
      dbPoolSize: settings.pool.dbPoolSize,
      maxResultBytes: settings.jobs.maxResultBytes,
      maxSteps: settings.jobs.maxSteps,
      maxStepResultBytes: settings.jobs.maxStepResultBytes,
      maxPayloadBytes: settings.jobs.maxPayloadBytes,
      logLevel: settings.log.level,
      supervisor,
      taskConfig: { thumbnails: settings.thumbnails, reports: settings.reports, schema: settings.database.schema },
    },
  });
}

/** One fetcher per configured queue, claiming into the dispatcher and handing back through it. */
export function buildFetchers(p: {
  store: Store;
  settings: Settings;
  owner: string;
  dispatcher: Dispatcher;
  durableClaims: () => boolean;
  beforeClaim: () => Promise<void>;
  /** A queue's jobs whose runs have ended, outcomes not yet written (the completer's). */
  ended: (queue: string) => readonly ClaimedJob[];
  events: SupervisorEvents;
  hooks: Hooks;
}): Map<string, Fetcher> {
  const { settings, dispatcher } = p;
  const fetchers = new Map<string, Fetcher>();
  for (const [queue, queueSettings] of Object.entries(settings.queues)) {
    const strategy = claimStrategyFor(
      queueSettings,
      {
        store: p.store,
        queue,
        owner: p.owner,
        leaseMs: settings.jobs.lease,
        maxPayloadBytes: settings.jobs.maxPayloadBytes,
        durable: p.durableClaims,
      },
      { ended: () => p.ended(queue) },
    );
    const fetcher = new Fetcher({
      queue,
      settings: queueSettings,
      strategy,
      leaseMs: settings.jobs.lease,
      pollIntervalMs: settings.poll.interval,
      capacity: () => dispatcher.capacity(queue),
      deliver: (jobs: ClaimedJob[]) => dispatcher.add(jobs),
      handBack: (jobs, reason) => dispatcher.handBack(jobs, reason),
      beforeClaim: p.beforeClaim,
      events: p.events,
      hooks: p.hooks,
    });
    fetchers.set(queue, fetcher);
  }
  return fetchers;
}

/**
 * The heartbeat's own connection out of the pool (db/held.ts) when the pool has
 * at least 3: leases are then renewed even when the pool is exhausted, and a
 * drain still writes when the pool's owner ends it under the supervisor.
 */
export function buildHeldConnection(pool: pg.Pool, settings: Settings): HeldConnection | undefined {
  const poolMax = (pool as { options?: { max?: number } }).options?.max ?? settings.database.poolSize;
  return poolMax >= 3 ? new HeldConnection(pool) : undefined;
}

/** The heartbeat, through the held connection when there is one. */
export function buildHeartbeat(p: {
  connection: HeldConnection | undefined;
  store: Store;
  settings: Settings;
  owner: string;
  beat: () => Promise<void>;
  /** Where claims are held (the heartbeat renews them all) and runs stop when their lease is lost. */
  dispatcher: Dispatcher;
  completer: { fences(): Fence[] };
  fetchers: Map<string, Fetcher>;
  events: SupervisorEvents;
  hooks: Hooks;
}): Loop {
  const { connection, dispatcher, fetchers } = p;
  return createHeartbeat({
    store: connection ? { db: connection.db, schema: p.store.schema } : p.store,
    beat: p.beat,
    owner: p.owner,
    leaseMs: p.settings.jobs.lease,
    // Jobs a fetcher holds for their rate-limit start slot are claimed too.
    held: () => [...dispatcher.fences(), ...p.completer.fences(), ...[...fetchers.values()].flatMap((f) => f.fences())],
    onLost: (tokens) => {
      for (const fetcher of fetchers.values()) fetcher.leaseLost(tokens);
      dispatcher.leaseLost(tokens);
    },
    events: p.events,
    hooks: p.hooks,
  });
}

/** The loops that keep the table in order: reaper, cleanup, scheduler. */
export function buildMaintenance(store: Store, settings: Settings, events: SupervisorEvents, hooks: Hooks): Loop[] {
  return [
    createReaper(store, settings.reaper, events, hooks),
    createCleanup(store, settings.cleanup, events, hooks),
    createScheduler({
      store,
      schedules: settings.schedules,
      settings: settings.scheduler,
      maxAttempts: settings.jobs.maxAttempts,
      events,
      hooks,
    }),
  ];
}

/** This supervisor's row in the supervisors table: its queues, their limits, and the jobs it holds. */
export function buildPresence(
  store: Store,
  settings: Settings,
  id: string,
  inFlight: () => number,
  log: Logger,
  cluster?: { primary: string; slot: number },
): Presence {
  return createPresence({
    store,
    id,
    queues: Object.fromEntries(Object.entries(settings.queues).map(([name, q]) => [name, q.concurrency])),
    queueConfig: queueConfigs(settings.queues),
    leaseMs: settings.jobs.lease,
    inFlight,
    log,
    cluster,
  });
}

/** Which queues are paused: a paused queue claims nothing, and its claimed jobs not yet started go back. */
export function buildPauseWatch(p: {
  store: Store;
  fetchers: Map<string, Fetcher>;
  dispatcher: Dispatcher;
  notified: () => boolean;
  events: SupervisorEvents;
  hooks: Hooks;
}): PauseWatch {
  return new PauseWatch({
    store: p.store,
    queues: [...p.fetchers.keys()],
    intervalMs: PAUSE_POLL_MS,
    notified: p.notified,
    onPause: (queue) => {
      p.fetchers.get(queue)?.setPaused(true);
      p.dispatcher.releaseBuffered(queue);
    },
    onResume: (queue) => p.fetchers.get(queue)?.setPaused(false),
    events: p.events,
    hooks: p.hooks,
  });
}
