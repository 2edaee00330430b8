/**
 * run()'s options: any section of the configuration schema (the same names,
 * values and checks as the files), plus what only code can give. They are
 * checked as strictly as the files: an unknown or mistyped key throws
 * ConfigError naming it, with the nearest valid key.
 *
 * run() reads no configuration file and no environment variable: an app
 * passes what it wants (from its own config, env or flags). Schema defaults
 * fill in the rest; none of jobvisor's own config files is applied (no `cpu`
 * queue, no schedule), and a built-in task runs only if the app maps it
 * (`tasks: { thumbnail: builtinTask('thumbnail') }`).
 */
import type pg from 'pg';
import { loadConfig, type Settings } from '../config/index.ts';
import type { QueueInput, ScheduleInput } from '../config/sections.ts';
import { schema } from '../config/schema.ts';
import { isPlainObject } from '../config/validate.ts';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { closestKey } from '../suggest.ts';
import { resolveTaskFiles, toPath } from './task_setup.ts';

/** A schema node as options give it: every key optional; durations as "30s" or ms. */
type InputOf<N> = N extends { default: infer D }
  ? D extends string
    ? string | number
    : D extends number
      ? number
      : D extends boolean
        ? boolean
        : D
  : { [K in keyof N]?: InputOf<N[K]> };

type Sections = InputOf<typeof schema>;

type ThreadSection = NonNullable<Sections['pool']>;

/**
 * The options of run(): every section of the configuration file (`queues`,
 * `pool`, `jobs`, `backoff`, `schedules`, …, same names and checks; durations
 * as "30s" or milliseconds), plus the database (`connectionString` and/or a
 * pg.Pool as `pool`), the app's tasks (`tasks` map or `tasksDir`), `metrics`,
 * `logger`, `migrate` and `handleSignals`. Unknown keys throw ConfigError
 * naming the nearest valid one. run() reads no config file and no environment.
 */
export interface RunOptions extends Omit<Sections, 'queues' | 'schedules' | 'tasks' | 'metrics' | 'database' | 'pool'> {
  /** PostgreSQL connection string. Give this, or a pg.Pool as `pool`, or both (then this one is used for LISTEN and ctx.db). */
  connectionString?: string;
  /**
   * An existing pg.Pool for claims and outcomes (run() never ends it), or the
   * config section `pool` (worker threads: maxThreads, …). With a pg.Pool, give
   * that section as `threads`.
   */
  pool?: pg.Pool | ThreadSection;
  /** The config section `pool` (worker threads), when `pool` is a pg.Pool. */
  threads?: ThreadSection;
  /** The app's tasks: kind → module (path, `file:` URL text or URL object); relative paths from the working directory. */
  tasks?: Record<string, string | URL>;
  /** A folder of task modules, one `<kind>.{js,mjs,cjs,ts}` per kind (config `tasks.dir`). */
  tasksDir?: string | URL;
  /** Serve /metrics, /healthz and /readyz (as `jobvisor start` does); not served unless given. */
  metrics?: Sections['metrics'];
  database?: Omit<NonNullable<Sections['database']>, 'url'>;
  queues?: Record<string, QueueInput>;
  schedules?: ScheduleInput[];
  /** The app's pino logger: event logs and start-up warnings go through it (default: jobvisor's, on stdout). */
  logger?: Logger;
  /** Drain on SIGTERM/SIGINT and exit, as `jobvisor start` does (default false). */
  handleSignals?: boolean;
  /** Apply migrations before starting (default false: wait, not ready, until `jobvisor migrate` has run). */
  migrate?: boolean;
}

/** The options that are not configuration sections. */
const RUN_KEYS = [
  'connectionString',
  'pool',
  'threads',
  'tasks',
  'tasksDir',
  'metrics',
  'logger',
  'handleSignals',
  'migrate',
] as const;

/** A pg.Pool (or anything that pools like one), as opposed to the `pool` config section. */
export function isPgPool(value: unknown): value is pg.Pool {
  const v = value as { connect?: unknown; query?: unknown } | null | undefined;
  return typeof v?.connect === 'function' && typeof v.query === 'function';
}

export interface ResolvedRun {
  settings: Settings;
  /** The pg.Pool given, if any. */
  pool: pg.Pool | undefined;
  taskFiles: Record<string, string>;
  serveMetrics: boolean;
}

/**
 * The settings and tasks that `options` describe.
 * @throws ConfigError naming an unknown, mistyped or invalid key.
 */
export function resolveRunOptions(options: RunOptions, cwd = process.cwd()): ResolvedRun {
  if (typeof options !== 'object' || options === null) throw new ConfigError('run() takes an options object');
  const sections: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (key === 'pool' && !isPgPool(value)) {
      if (value !== undefined) sections.pool = value;
      continue;
    }
    if (key === 'threads') {
      if (isPgPool(options.pool) || options.pool === undefined) sections.pool = value;
      else throw new ConfigError('invalid configuration: give the pool section as pool or as threads, not both');
      continue;
    }
    if ((RUN_KEYS as readonly string[]).includes(key) && key !== 'metrics') continue;
    if (!Object.hasOwn(schema, key)) {
      const near = closestKey(key, [...RUN_KEYS, ...Object.keys(schema)]);
      throw new ConfigError(
        `invalid configuration: unknown run() option ${JSON.stringify(key)}${near ? ` (did you mean "${near}"?)` : ''}`,
      );
    }
    if (value !== undefined) sections[key] = value;
  }
  // A URL given as `database` (or as `database.url`, the file's key) is refused naming the option that takes it.
  const database = sections.database;
  const section = isPlainObject(database);
  if (database !== undefined && (!section || 'url' in database))
    throw new ConfigError(
      `invalid configuration: run() takes the database as connectionString or pool, not ${section ? 'database.url' : 'database'}`,
    );
  const pool = isPgPool(options.pool) ? options.pool : undefined;
  if (!options.connectionString && !pool)
    throw new ConfigError('invalid configuration: run() needs connectionString or a pg.Pool as pool');
  if (options.connectionString !== undefined && typeof options.connectionString !== 'string')
    throw new ConfigError('invalid configuration: connectionString must be a string');
  if (options.tasksDir !== undefined) {
    if (typeof options.tasksDir !== 'string' && !(options.tasksDir instanceof URL))
      throw new ConfigError('invalid configuration: tasksDir must be a folder path or URL');
    sections.tasks = { dir: toPath(options.tasksDir, cwd) };
  }
  const settings = loadConfig({ env: {}, standardLayers: false, overrides: sections });
  return {
    settings,
    pool,
    taskFiles: resolveTaskFiles(options.tasks, cwd),
    serveMetrics: options.metrics !== undefined,
  };
}

/**
 * A connection string for a pool given without one: LISTEN, the probes and the
 * tasks' ctx.db open their own connections with it.
 * @throws ConfigError when the pool's options say too little (pass connectionString too).
 */
export function urlOfPool(pool: pg.Pool): string {
  const o = (pool as unknown as { options: pg.PoolConfig }).options;
  if (typeof o.connectionString === 'string' && o.connectionString) return o.connectionString;
  if (typeof o.password === 'function' || o.ssl)
    throw new ConfigError(
      'invalid configuration: this pool sets ssl or a password function: pass connectionString too (used for LISTEN and ctx.db)',
    );
  const url = new URL('postgres://');
  url.hostname = o.host ?? process.env.PGHOST ?? 'localhost';
  url.port = String(o.port ?? process.env.PGPORT ?? 5432);
  url.username = encodeURIComponent(o.user ?? process.env.PGUSER ?? '');
  if (o.password) url.password = encodeURIComponent(o.password);
  url.pathname = `/${encodeURIComponent(o.database ?? process.env.PGDATABASE ?? o.user ?? '')}`;
  return url.toString();
}
