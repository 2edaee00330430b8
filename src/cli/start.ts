/**
 * `jobvisor start [--migrate]`: runs a supervisor until SIGTERM/SIGINT, which
 * drain it and exit 0. With the embedded development database (no DATABASE_URL)
 * or --migrate it applies migrations first; otherwise it waits, not ready,
 * until `jobvisor migrate` has run (the Kubernetes migration Job).
 *
 * The configuration is the layered one (config/load.ts): jobvisor's own
 * config/default.json and config/$NODE_ENV.json, then the app's file
 * (JOBVISOR_CONFIG, else ./jobvisor.config.json, else ./config/jobvisor.json),
 * then the environment. The supervisor itself is the one run() starts
 * (run/runner.ts), with metrics served, signals handled and the
 * OpenTelemetry SDK started from OTEL_*.
 */
import { unreadConfigFiles } from '../config/index.ts';
import { startRunner } from '../run/runner.ts';
import { parseFlags } from './args.ts';
import { openContext } from './context.ts';

export async function startCommand(argv: string[]): Promise<number> {
  const values = parseFlags(argv, { migrate: { type: 'boolean' } }, 'start');
  const ctx = await openContext({ logTo: 1 });
  const { settings, log } = ctx;
  for (const file of unreadConfigFiles(process.env, process.cwd()))
    log.warn(
      { file },
      'this file is not read: jobvisor reads JOBVISOR_CONFIG, else ./jobvisor.config.json, else ./config/jobvisor.json',
    );
  await startRunner({
    settings,
    pool: ctx.pool,
    // ctx.close() ends the pool and the embedded server this command started.
    ownsPool: false,
    databaseUrl: ctx.databaseUrl,
    log,
    taskFiles: {},
    serveMetrics: true,
    migrate: ctx.embedded !== null || values.migrate === true,
    migratePool: ctx.directPool(),
    handleSignals: true,
    startSdk: true,
    close: () => ctx.close(),
  });
  // Keep running: signals end the process.
  return new Promise<number>(() => {});
}
