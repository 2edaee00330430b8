/**
 * The supervisor's metrics and probes, wired: bounded labels, event counters,
 * database gauges read with a deadline, loop health, and readiness from a
 * cached probe on its own connection.
 */
import type { Settings } from '../config/index.ts';
import type { Logger } from '../log.ts';
import { LoopHealth } from './loop_health.ts';
import type { Supervisor } from '../supervisor/supervisor.ts';
import { threadWatch } from '../supervisor/loops/thread_watch.ts';
import { createDatabaseGauges } from './database_gauges.ts';
import { createLabelSet } from './labels.ts';
import type { Metrics } from './metrics.ts';
import { observeEvents } from './observe.ts';
import { DatabaseProbe, READ_ONLY_REASON } from './readiness.ts';
import { startHttpServer, type Readiness } from './server.ts';

export interface ObserveOptions {
  settings: Settings;
  supervisor: Supervisor;
  databaseUrl: string;
  metrics: Metrics;
  log: Logger;
  /** Task kinds known beyond tasks.dir and the built-ins enabled (the app's tasks map). */
  kinds?: string[];
}

/** A supervisor's metrics and readiness, without a server: what a cluster child hands its primary. */
export interface ObservedSupervisor {
  metrics: Metrics;
  readiness: () => Promise<Readiness>;
  /** Refreshes the gauges read at scrape time (threads, in flight, database gauges). */
  beforeScrape: (deadlineMs: number) => Promise<void>;
  probe: DatabaseProbe;
  close: () => Promise<void>;
}

/** Wires the metrics and the readiness of `supervisor` (serveSupervisor serves them). */
export function observeSupervisor(options: ObserveOptions): ObservedSupervisor {
  const { settings, supervisor, metrics, log } = options;
  const labels = createLabelSet({
    queues: Object.keys(settings.queues),
    kinds: [...settings.schedules.map((s) => s.kind), ...(options.kinds ?? []), ...settings.tasks.builtins],
    taskDirs: [settings.tasks.dir],
  });
  observeEvents(supervisor.events, metrics, labels);
  const gauges = createDatabaseGauges(supervisor.store, metrics, settings.metrics.refresh, labels);
  const probe = new DatabaseProbe({ url: options.databaseUrl, schema: settings.database.schema });
  const health = new LoopHealth(supervisor.events, { leaseMs: settings.jobs.lease });
  supervisor.events.on('loop:failed', ({ loop, failingMs }) =>
    log.error({ loop, failingMs }, 'loop failing for longer than a lease: not ready'),
  );
  supervisor.events.on('loop:recovered', ({ loop, failedMs }) => log.info({ loop, failedMs }, 'loop recovered'));
  health.start();

  const readiness = async (): Promise<Readiness> => {
    if (supervisor.draining) return { ready: false, reason: 'draining' };
    if (supervisor.primary.readOnlyServer) return { ready: false, reason: READ_ONLY_REASON };
    const db = await probe.check();
    if (!db.ready) return db;
    health.databaseAnswered(probe.answeredAt);
    const failing = health.failing();
    if (failing.length === 0) return { ready: true };
    const list = failing.map((f) => `${f.loop} (${Math.round(f.failingMs / 1000)} s)`).join(', ');
    return { ready: false, reason: `failing for longer than a lease: ${list}` };
  };

  return {
    metrics,
    readiness,
    probe,
    beforeScrape: async (deadlineMs) => {
      for (const queue of Object.keys(settings.queues)) metrics.inFlight.labels(queue).set(supervisor.inFlight(queue));
      metrics.threads.set(supervisor.threadCount());
      metrics.threadsBusy.set(supervisor.threadsBusy());
      metrics.threadsStuck.set(threadWatch.stuck);
      health.databaseAnswered(probe.answeredAt);
      metrics.loopFailing.reset();
      for (const f of health.failing()) metrics.loopFailing.labels(f.loop).set(f.failingMs / 1000);
      await gauges.refresh(deadlineMs);
    },
    close: async () => {
      health.stop();
      await probe.close();
    },
  };
}

/** observeSupervisor() served on settings.metrics.{host,port}: /metrics, /healthz, /readyz. */
export async function serveSupervisor(options: ObserveOptions) {
  const observed = observeSupervisor(options);
  const http = await startHttpServer({
    host: options.settings.metrics.host,
    port: options.settings.metrics.port,
    registry: options.metrics.registry,
    readiness: observed.readiness,
    beforeScrape: observed.beforeScrape,
  });
  return {
    port: http.port as number | undefined,
    readiness: observed.readiness,
    probe: observed.probe,
    async close() {
      await http.close();
      await observed.close();
    },
  };
}
