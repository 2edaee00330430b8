/**
 * What every command needs: validated settings, a logger, and a database URL
 * (the configured one, or the embedded development server, started on demand).
 */
import pg from 'pg';
import { loadConfig, type Settings } from '../config/index.ts';
import { accessRefused, ConfigError, notMigrated } from '../errors.ts';
import { ensureEmbeddedPostgres, type EmbeddedServer } from '../db/embedded.ts';
import { createPool } from '../db/pool.ts';
import { createLogger, type Logger } from '../log.ts';
import { exitCodeOf, type Signals, watchSignals } from './signals.ts';

export interface CommandContext {
  settings: Settings;
  log: Logger;
  databaseUrl: string;
  embedded: EmbeddedServer | null;
  pool: pg.Pool;
  /**
   * The pool for work that needs a session of its own (migrations under their
   * lock): on database.directUrl when set (database.url goes through a pooler
   * in transaction mode), else `pool`.
   */
  directPool(): pg.Pool;
  /** Ends the pools and stops the embedded server if this command started it. */
  close(): Promise<void>;
}

const EMBEDDED_DATABASE = 'jobvisor';

export interface ContextOptions {
  /** 1 for commands whose stdout is a log (start), 2 for commands whose stdout is their answer. */
  logTo: 1 | 2;
  logLevel?: string;
  keepEmbedded?: boolean;
  /**
   * A command that does its work and exits (enqueue, jobs, stats, queues): a
   * SIGINT or SIGTERM after it started the embedded server lets the work
   * finish, and close() then stops the server and exits 128 + the signal's
   * number, where Node's default exit left the server running.
   */
  oneShot?: boolean;
  settings?: Settings;
}

export async function openContext(options: ContextOptions): Promise<CommandContext> {
  const settings = options.settings ?? loadConfig();
  const log = createLogger({ level: options.logLevel ?? settings.log.level, fd: options.logTo });
  let embedded: EmbeddedServer | null = null;
  let held: Signals | null = null;
  let databaseUrl = settings.database.url;
  if (!databaseUrl) {
    // Production must name its database: never fall back to whatever listens
    // on the development port.
    if (process.env.NODE_ENV === 'production')
      throw new ConfigError('invalid configuration: DATABASE_URL (database.url) is required when NODE_ENV=production');
    embedded = await holdingSignals(
      () => ensureEmbeddedPostgres({ dir: settings.database.embedded.dir, port: settings.database.embedded.port, log }),
      (server) => (server.startedHere ? server.stop() : Promise.resolve()),
    );
    if (options.oneShot && embedded.startedHere && !options.keepEmbedded) held = holdUntilClosed();
    const server = embedded;
    databaseUrl = await ensureDatabase(server.url, EMBEDDED_DATABASE).catch(async (err: unknown) => {
      // No context to close yet: stop the server this command started, as close() would.
      held?.dispose();
      if (server.startedHere && !options.keepEmbedded) await server.stop().catch(() => {});
      throw err;
    });
  }
  const pool = createPool(databaseUrl, { max: settings.database.poolSize, log });
  let direct: pg.Pool | undefined;
  return {
    settings,
    log,
    databaseUrl,
    embedded,
    pool,
    directPool() {
      if (!settings.database.directUrl) return pool;
      direct ??= createPool(settings.database.directUrl, { max: 2, log, applicationName: 'jobvisor-direct' });
      return direct;
    },
    async close() {
      await direct?.end().catch(() => {});
      await pool.end().catch(() => {});
      if (embedded?.startedHere && !options.keepEmbedded) await embedded.stop();
      held?.dispose();
      if (held?.received) process.exit(exitCodeOf(held.received));
    },
  };
}

/** Signals noted, not obeyed, until close() has stopped the embedded server (ContextOptions.oneShot). */
function holdUntilClosed(): Signals {
  const held = watchSignals();
  void held.wait.then((signal) =>
    process.stderr.write(
      `${signal}: stopping the embedded server once this command is done (again to exit at once, leaving it running)\n`,
    ),
  );
  return held;
}

/**
 * Runs `start` (the embedded server's start: initdb, pg_ctl) with SIGINT and
 * SIGTERM noted (signals.ts): one that comes meanwhile undoes what `start`
 * made (stops the server it started) and then exits 128 + the signal's
 * number, where Node's default would have exited at once and left the server
 * running. A second signal exits at once.
 */
async function holdingSignals<T>(start: () => Promise<T>, undo: (made: T) => Promise<void>): Promise<T> {
  const signals = watchSignals();
  try {
    const made = await start();
    if (signals.received) await undo(made);
    return made;
  } finally {
    signals.dispose();
    if (signals.received) process.exit(exitCodeOf(signals.received));
  }
}

/**
 * Runs a one-shot command's work with its context, closed afterwards. A
 * database that `jobvisor migrate` has not prepared gives NotMigratedError
 * (saying to run it), not pg's `relation "jobvisor.jobs" does not exist`; one
 * that refuses the connection for good gives DatabaseAccessError.
 */
export async function withContext<T>(options: ContextOptions, fn: (ctx: CommandContext) => Promise<T>): Promise<T> {
  const ctx = await openContext({ ...options, oneShot: true });
  try {
    return await fn(ctx);
  } catch (err) {
    throw notMigrated(err, ctx.settings.database.schema) ?? accessRefused(err) ?? err;
  } finally {
    await ctx.close();
  }
}

/** Creates `name` on the server of `serverUrl` if missing; returns its URL. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created by a concurrent command
      });
    }
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
