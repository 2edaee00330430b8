/**
 * `jobvisor start [--migrate]`: runs a supervisor until SIGTERM/SIGINT, which
 * drain it and exit 0. With the embedded development database (no DATABASE_URL)
 * or --migrate it applies migrations first; otherwise it waits, not ready,
 * until `jobvisor migrate` has run (the Kubernetes migration Job).
 */
import { connectionBudget, effectiveQueueLimits } from '../config/index.ts';
import { migrate } from '../db/migrate.ts';
import { createMetrics } from '../metrics/metrics.ts';
import { serveSupervisor } from '../metrics/supervisor-http.ts';
import { safeUrl } from '../log.ts';
import { logEvents } from '../supervisor/logging.ts';
import { drainOnSignals } from '../supervisor/shutdown.ts';
import { threadWatch } from '../supervisor/thread_watch.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { traceEvents } from '../supervisor/tracing.ts';
import { startTracing } from '../tracing/sdk.ts';
import { VERSION } from '../version.ts';
import { parseFlags } from './args.ts';
import { openContext } from './context.ts';

export async function startCommand(argv: string[]): Promise<number> {
  const values = parseFlags(argv, { migrate: { type: 'boolean' } }, 'start');
  const ctx = await openContext({ logTo: 1 });
  const { settings, log } = ctx;
  const schema = settings.database.schema;
  // A queue whose concurrency the threads cannot reach: one line each, naming the limit and the key.
  for (const warning of effectiveQueueLimits(settings).warnings) log.warn(warning);
  if (ctx.embedded || values.migrate) await migrate(ctx.directPool(), { schema, log });
  // OpenTelemetry from the OTEL_* environment: before the thread pool exists.
  const otel = await startTracing(process.env, { contextManager: false });
  if (otel.state === 'unavailable')
    log.warn({ error: otel.error }, 'OTEL_* is set but the OpenTelemetry SDK is not installed');
  else if (otel.state !== 'off') log.info({ sdk: otel.state }, 'OpenTelemetry tracing on');

  const metrics = createMetrics();
  const supervisor = new Supervisor({ settings, databaseUrl: ctx.databaseUrl, log, pool: ctx.pool });
  logEvents(supervisor.events, log.child({ supervisor: supervisor.id }));
  if (otel.state === 'started' || otel.state === 'own-sdk') traceEvents(supervisor.events, supervisor.id);
  metrics.info.labels(supervisor.id, VERSION).set(1);
  const { readiness, ...http } = await serveSupervisor({
    settings,
    supervisor,
    databaseUrl: ctx.databaseUrl,
    metrics,
    log,
  });

  threadWatch.on('stuck', (e) => {
    log.error(e, 'worker thread terminated but still alive: blocked in a synchronous call?');
    supervisor.events.emit('thread:stuck', e);
  });
  threadWatch.on('gone', (e) => supervisor.events.emit('thread:unstuck', e));

  let stopRequested = false;
  drainOnSignals({
    log,
    graceMs: settings.shutdown.grace,
    threadsAlive: (ms) => threadWatch.end(ms),
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
      // At most, per pool (README "Connection budget"); LISTEN goes to database.directUrl when set.
      connections: connectionBudget(settings),
      listen: settings.database.directUrl ? 'database.directUrl' : 'database.url',
      version: VERSION,
    },
    'ready',
  );
  // Keep running: signals end the process.
  return new Promise<number>(() => {});
}
