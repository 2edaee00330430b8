/**
 * `jobvisor start [--migrate]`: runs a supervisor until SIGTERM/SIGINT, which
 * drain it and exit 0. With the embedded development database (no DATABASE_URL)
 * or --migrate it applies migrations first; otherwise it waits, not ready,
 * until `jobvisor migrate` has run (the Kubernetes migration Job).
 */
import { isMigrated, migrate } from '../db/migrate.ts';
import { createDatabaseGauges } from '../metrics/database-gauges.ts';
import { createMetrics } from '../metrics/metrics.ts';
import { observeEvents } from '../metrics/observe.ts';
import { startHttpServer, type Readiness } from '../metrics/server.ts';
import { safeUrl } from '../log.ts';
import { logEvents } from '../supervisor/logging.ts';
import { drainOnSignals } from '../supervisor/shutdown.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { traceEvents } from '../supervisor/tracing.ts';
import { startTracing } from '../tracing/sdk.ts';
import { VERSION } from '../version.ts';
import { parse } from './args.ts';
import { openContext } from './context.ts';

const READY_CHECK_TIMEOUT_MS = 2000;

export async function startCommand(argv: string[]): Promise<number> {
  const { values } = parse(argv, { migrate: { type: 'boolean' } }, 'start');
  const ctx = await openContext({ logTo: 1 });
  const { settings, log } = ctx;
  const schema = settings.database.schema;
  if (ctx.embedded || values.migrate) await migrate(ctx.pool, { schema, log });
  // OpenTelemetry from the OTEL_* environment: before the thread pool exists.
  const otel = await startTracing(process.env, { contextManager: false });
  if (otel.state === 'unavailable')
    log.warn({ error: otel.error }, 'OTEL_* is set but the OpenTelemetry SDK is not installed');
  else if (otel.state !== 'off') log.info({ sdk: otel.state }, 'OpenTelemetry tracing on');

  const metrics = createMetrics();
  const supervisor = new Supervisor({ settings, databaseUrl: ctx.databaseUrl, log, pool: ctx.pool });
  logEvents(supervisor.events, log.child({ supervisor: supervisor.id }));
  observeEvents(supervisor.events, metrics);
  if (otel.state === 'started' || otel.state === 'own-sdk') traceEvents(supervisor.events, supervisor.id);
  metrics.info.labels(supervisor.id, VERSION).set(1);
  const gauges = createDatabaseGauges(supervisor.store, metrics, settings.metrics.refresh);

  let migrated = false;
  const readiness = async (): Promise<Readiness> => {
    if (supervisor.draining) return { ready: false, reason: 'draining' };
    try {
      await withTimeout(ctx.pool.query('SELECT 1'), READY_CHECK_TIMEOUT_MS);
      migrated ||= await withTimeout(isMigrated(ctx.pool, { schema }), READY_CHECK_TIMEOUT_MS);
    } catch {
      return { ready: false, reason: 'database unreachable' };
    }
    return migrated ? { ready: true } : { ready: false, reason: 'schema not migrated: run jobvisor migrate' };
  };
  const http = await startHttpServer({
    host: settings.metrics.host,
    port: settings.metrics.port,
    registry: metrics.registry,
    readiness,
    beforeScrape: async () => {
      for (const queue of Object.keys(settings.queues))
        metrics.inFlight.labels(queue).set(supervisor.inFlightOf(queue));
      metrics.threads.set(supervisor.threadCount);
      metrics.threadsBusy.set(supervisor.threadsBusy());
      await gauges.refresh();
    },
  });

  let stopRequested = false;
  drainOnSignals({
    log,
    stop: async (reason) => {
      stopRequested = true;
      await supervisor.stop(reason);
      await http.close();
      await ctx.close();
      if (otel.state === 'started') await otel.tracing.shutdown().catch(() => {});
    },
  });

  // Wait for the database and the schema before claiming anything.
  let warned = false;
  while (!stopRequested) {
    const r = await readiness();
    if (r.ready) break;
    if (!warned) log.warn({ reason: r.reason }, 'waiting before starting to claim jobs');
    warned = true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (stopRequested) return 0;
  await supervisor.start();
  log.info(
    {
      database: safeUrl(ctx.databaseUrl),
      metricsPort: http.port,
      queues: settings.queues,
      threads: settings.pool.maxThreads,
      version: VERSION,
    },
    'ready',
  );
  // Keep running: signals end the process.
  return new Promise<number>(() => {});
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
  ]);
}
