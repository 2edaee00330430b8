/**
 * `run(options)`: a supervisor started from an app's code, with what
 * `jobvisor start` gives (runner.ts). See options.ts for the options and
 * README "Use it in your service" for the pattern.
 *
 * Resolves once the supervisor has started claiming (after the start-up
 * checks, the migrations when `migrate: true`, and the wait for a reachable,
 * migrated database otherwise). Rejects with ConfigError (code CONFIG_INVALID)
 * for bad options and TaskSetupError (TASKS_DIR_MISSING, TASK_FILE_MISSING,
 * TASK_NO_TS_LOADER, TASK_IMPORT_FAILED, TASK_INVALID) for a task that cannot
 * run, leaving nothing running.
 */
import { createPool } from '../db/pool.ts';
import { createLogger } from '../log.ts';
import { resolveRunOptions, urlOfPool, type RunOptions } from './options.ts';
import { startRunner, type Runner } from './runner.ts';

export type { RunOptions } from './options.ts';
export type { Runner } from './runner.ts';

export async function run(options: RunOptions): Promise<Runner> {
  const { settings, pool: given, taskFiles, serveMetrics } = resolveRunOptions(options);
  const log = options.logger ?? createLogger({ level: settings.log.level });
  const databaseUrl = options.connectionString ?? urlOfPool(given as NonNullable<typeof given>);
  const pool = given ?? createPool(databaseUrl, { max: settings.database.poolSize, log, applicationName: 'jobvisor' });
  return startRunner({
    settings,
    pool,
    ownsPool: given === undefined,
    databaseUrl,
    log,
    taskFiles,
    serveMetrics,
    migrate: options.migrate === true,
    handleSignals: options.handleSignals === true,
    startSdk: false,
  });
}
