/**
 * The package root's `run`: the same function as `jobvisor/worker`'s
 * (run.ts), loaded by a dynamic import when it is called, so that an app that
 * imports the root to enqueue does not load the supervisor, the worker
 * threads (piscina) or the metrics (prom-client).
 */
import type { RunOptions } from './options.ts';
import type { Runner } from './runner.ts';

/**
 * Starts a supervisor in this process: it claims the jobs of the configured
 * queues, runs their tasks on worker threads, and runs the reaper, cleanup
 * and scheduler; with `metrics: { port }` it also serves /metrics, /healthz and
 * /readyz. Options follow the configuration schema plus `connectionString` or
 * `pool`, `tasks` (kind → module path or URL) or `tasksDir`, `metrics`,
 * `logger`, `migrate` and `handleSignals`.
 *
 * Imported from the package root, the supervisor's code is loaded on the first
 * call (`jobvisor/worker` loads it with the import); the function, its options
 * and its runner are the same.
 *
 * Resolves once the supervisor has started claiming (after the start-up
 * checks, the migrations when `migrate: true`, and the wait for a reachable,
 * migrated database otherwise). `runner.stop()` drains it: no new claims,
 * running jobs finish within the grace period, the rest are handed back.
 *
 * @param options What to run and how; every key of the configuration file may be given here.
 * @returns The running supervisor: `stop()`, `events`, `metricsPort`, ….
 * @throws ConfigError (code CONFIG_INVALID) for bad options, and TaskSetupError
 *   (TASKS_DIR_MISSING, TASK_FILE_MISSING, TASK_NO_TS_LOADER, TASK_IMPORT_FAILED,
 *   TASK_INVALID) for a task that cannot run, leaving nothing running;
 *   DatabaseAccessError when the server refuses for good (wrong password,
 *   missing database).
 *
 * @example
 * ```ts
 * const runner = await run({
 *   connectionString: process.env.DATABASE_URL,
 *   tasks: { send_welcome: new URL('./tasks/send_welcome.ts', import.meta.url) },
 * });
 * process.once('SIGTERM', () => void runner.stop());
 * ```
 */
export async function run(options: RunOptions): Promise<Runner> {
  const supervisor = await import('./run.ts');
  return supervisor.run(options);
}
