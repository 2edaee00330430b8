/**
 * `jobvisor start [--migrate]`: runs a supervisor until SIGTERM/SIGINT, which
 * drain it and exit 0. With the embedded development database (no DATABASE_URL)
 * or --migrate it applies migrations first; otherwise it waits, not ready,
 * until `jobvisor migrate` has run (the Kubernetes migration Job).
 */
import { migrate } from '../db/migrate.ts';
import { createMetrics } from '../metrics/metrics.ts';
import { serveSupervisor } from '../metrics/supervisor-http.ts';
import { safeUrl } from '../log.ts';
import { logEvents } from '../supervisor/logging.ts';
import { drainOnSignals } from '../supervisor/shutdown.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { VERSION } from '../version.ts';
import { parse } from './args.ts';
import { openContext } from './context.ts';

export async function startCommand(argv: string[]): Promise<number> {
  const { values } = parse(argv, { migrate: { type: 'boolean' } }, 'start');
  const ctx = await openContext({ logTo: 1 });
  const { settings, log } = ctx;
  const schema = settings.database.schema;
  if (ctx.embedded || values.migrate) await migrate(ctx.pool, { schema, log });

  const metrics = createMetrics();
  const supervisor = new Supervisor({ settings, databaseUrl: ctx.databaseUrl, log, pool: ctx.pool });
  logEvents(supervisor.events, log.child({ supervisor: supervisor.id }));
  metrics.info.labels(supervisor.id, VERSION).set(1);
  const { readiness, ...http } = await serveSupervisor({
    settings,
    supervisor,
    databaseUrl: ctx.databaseUrl,
    metrics,
    log,
  });

  let stopRequested = false;
  drainOnSignals({
    log,
    stop: async (reason) => {
      stopRequested = true;
      await supervisor.stop(reason);
      await http.close();
      await ctx.close();
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
