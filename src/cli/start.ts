/**
 * `jobvisor start [--migrate] [--processes N|auto]`: runs a supervisor until
 * SIGTERM/SIGINT, which drain it and exit 0. With the embedded development
 * database (no DATABASE_URL) or --migrate it applies migrations first;
 * otherwise it waits, not ready, until `jobvisor migrate` has run (the
 * Kubernetes migration Job).
 *
 * The configuration is the layered one (config/load.ts): jobvisor's own
 * config/default.json, config/demo.json (its repository and image only: the
 * built-in tasks, the `cpu` queue, the nightly report) and
 * config/$NODE_ENV.json, then the app's file
 * (JOBVISOR_CONFIG, else ./jobvisor.config.json, else ./config/jobvisor.json),
 * then the environment. The supervisor itself is the one run() starts
 * (run/runner.ts), with metrics served, signals handled and the
 * OpenTelemetry SDK started from OTEL_*.
 *
 * A database that refuses this process for good (a wrong password, a missing
 * database or grant) ends the command at once with exit status 1 and one line
 * naming the server's reason (DatabaseAccessError); one that is away or
 * starting up is waited for.
 *
 * `cluster.processes` (--processes, JOBVISOR_PROCESSES) above 1 makes this
 * process the cluster primary (cluster/start.ts), which checks the connection
 * first and then forks this same command once per process; a forked one finds
 * its slot in the environment and runs as a cluster child (cluster/child.ts).
 * At 1 nothing of that runs.
 */
import { startChild } from '../cluster/child.ts';
import { resolveProcesses } from '../cluster/cpus.ts';
import { CHILD_SLOT_ENV } from '../cluster/messages.ts';
import { startCluster } from '../cluster/start.ts';
import { unreadConfigFiles } from '../config/index.ts';
import { checkAccess } from '../db/access.ts';
import { migrate } from '../db/migrate.ts';
import { startRunner, type RunnerSetup } from '../run/runner.ts';
import { parseFlags } from './args.ts';
import { openContext } from './context.ts';

export async function startCommand(argv: string[]): Promise<number> {
  const values = parseFlags(argv, { migrate: { type: 'boolean' }, processes: { type: 'string' } }, 'start');
  // Through the environment, so the flag is checked like the key (and a forked child sees the same).
  if (typeof values.processes === 'string') process.env.JOBVISOR_PROCESSES = values.processes;
  const slot = process.env[CHILD_SLOT_ENV];
  const ctx = await openContext({ logTo: 1 });
  const { settings } = ctx;
  const log = slot === undefined ? ctx.log : ctx.log.child({ child: Number(slot) });
  if (slot === undefined)
    for (const file of unreadConfigFiles(process.env, process.cwd()))
      log.warn(
        { file },
        'this file is not read: jobvisor reads JOBVISOR_CONFIG, else ./jobvisor.config.json, else ./config/jobvisor.json',
      );
  const migrating = slot === undefined && (ctx.embedded !== null || values.migrate === true);
  const setup: RunnerSetup = {
    settings,
    pool: ctx.pool,
    // ctx.close() ends the pool and the embedded server this command started.
    ownsPool: false,
    databaseUrl: ctx.databaseUrl,
    log,
    taskFiles: {},
    serveMetrics: true,
    migrate: migrating,
    migratePool: ctx.directPool(),
    handleSignals: true,
    startSdk: true,
    close: () => ctx.close(),
  };
  const processes = resolveProcesses(settings.cluster.processes);
  if (slot !== undefined) await startChild(setup);
  else if (processes > 1) {
    await checkAccess(ctx.pool, settings.database.schema).catch(async (err: unknown) => {
      await ctx.close();
      throw err;
    });
    if (migrating) await migrate(ctx.directPool(), { schema: settings.database.schema, log });
    await startCluster({
      settings,
      log,
      store: { db: ctx.pool, schema: settings.database.schema },
      processes,
      fork: {
        script: process.argv[1] as string,
        args: ['start'],
        // The embedded server this process started: children use it, they do not start their own.
        env: ctx.embedded ? { ...process.env, DATABASE_URL: ctx.databaseUrl } : { ...process.env },
      },
      close: () => ctx.close(),
    });
  } else await startRunner(setup);
  // Keep running: signals end the process.
  return new Promise<number>(() => {});
}
