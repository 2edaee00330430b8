/**
 * Configuration: one strict convict schema, loaded once at start.
 *
 * Layers, later wins: schema defaults → config/default.json → config/$NODE_ENV.json
 * (if present) → the file named by JOBVISOR_CONFIG → environment variables.
 * An unknown or mistyped key stops start-up with a message that names it (and the
 * nearest valid key). Durations are written as "30s", "5m" and come out as
 * milliseconds. Secrets (database.url) come only from the environment
 * (DATABASE_URL) or a mounted secret file (DATABASE_URL_FILE), never from a
 * configuration file, and are marked sensitive so convict never prints them.
 */
import convict from 'convict';
import { CronExpressionParser } from 'cron-parser';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDuration } from './duration.ts';
import { ConfigError } from './errors.ts';
import { closestKey } from './suggest.ts';

export interface QueueSettings {
  /** Jobs of this queue running at once in one supervisor. */
  concurrency: number;
  /** How many of this queue's jobs may share one worker thread (1 = CPU-bound: a thread each). */
  jobsPerThread: number;
  /** Extra jobs claimed ahead into a local buffer (0 = claim only what can start now). */
  prefetch: number;
  /** Per-queue timeout override in ms (null = jobs.timeout). */
  timeout: number | null;
}

export interface Schedule {
  name: string;
  cron: string;
  kind: string;
  payload: Record<string, unknown>;
  queue: string;
  priority: number;
  timezone: string | null;
}

export interface Settings {
  database: {
    url: string;
    poolSize: number;
    schema: string;
    embedded: { dir: string; port: number };
  };
  tasks: { dir: string };
  pool: {
    maxThreads: number;
    idleTimeout: number;
    maxOldGenerationSizeMb: number;
    maxYoungGenerationSizeMb: number;
    stackSizeMb: number;
    dbPoolSize: number;
  };
  queues: Record<string, QueueSettings>;
  jobs: { lease: number; timeout: number; maxAttempts: number; maxPayloadBytes: number };
  backoff: { base: number; max: number; jitter: number };
  poll: { interval: number };
  completer: { flushInterval: number; batchSize: number };
  reaper: { interval: number; batchSize: number };
  cleanup: { interval: number; retention: number; failedRetention: number; batchSize: number };
  scheduler: { interval: number; catchUp: number };
  schedules: Schedule[];
  shutdown: { grace: number };
  metrics: { port: number; host: string; refresh: number };
  log: { level: string };
  supervisor: { name: string };
  thumbnails: { dir: string; format: string };
  reports: { dir: string };
}

// No dots: convict reads a dot in a key as a path, so `queues: { "a.b": … }`
// could never load, and jobs enqueued to such a queue could never run.
const QUEUE_NAME = /^[A-Za-z0-9_:-]{1,200}$/;
const QUEUE_KEYS = ['concurrency', 'jobsPerThread', 'prefetch', 'timeout'] as const;
const SCHEDULE_KEYS = ['name', 'cron', 'kind', 'payload', 'queue', 'priority', 'timezone'] as const;

function durationFormat(value: unknown) {
  if (typeof value !== 'string' && typeof value !== 'number')
    throw new Error('must be a duration such as "30s" or "5m"');
  parseDuration(value);
}

/** The longest delay a Node timer holds (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A duration that drives a timer: at most MAX_TIMER_MS, and at least `minMs`
 * where a shorter one would turn a loop into a busy loop against the database
 * (measured: "0ms" or "30d" for poll/reaper/cleanup/scheduler intervals is
 * ~2,300 transactions per second from one idle supervisor instead of ~5).
 */
function timerFormat(minMs: number) {
  return (value: unknown) => {
    durationFormat(value);
    const ms = parseDuration(value as string | number);
    if (ms < minMs || ms > MAX_TIMER_MS) throw new Error(`must be from ${minMs} ms to 24d (it sets a timer)`);
  };
}

function intIn(min: number, max: number) {
  return (value: unknown) => {
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
      throw new Error(`must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
  };
}

function checkKeys(where: string, value: Record<string, unknown>, allowed: readonly string[]) {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      const near = closestKey(key, allowed);
      throw new Error(`unknown key "${where}.${key}"${near ? ` (did you mean "${where}.${near}"?)` : ''}`);
    }
  }
}

function validateQueues(value: unknown) {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('queues must be an object of queue name → settings');
  for (const [name, q] of Object.entries(value)) {
    if (!QUEUE_NAME.test(name))
      throw new Error(
        `queue name ${JSON.stringify(name)} must be 1-200 characters of letters, digits, _ : - (no dots)`,
      );
    if (typeof q !== 'object' || q === null || Array.isArray(q)) throw new Error(`queues.${name} must be an object`);
    const settings = q as Record<string, unknown>;
    checkKeys(`queues.${name}`, settings, QUEUE_KEYS);
    if (settings.concurrency !== undefined)
      guard(`queues.${name}.concurrency`, () => intIn(1, 10_000)(settings.concurrency));
    if (settings.jobsPerThread !== undefined)
      guard(`queues.${name}.jobsPerThread`, () => intIn(1, 1000)(settings.jobsPerThread));
    if (settings.prefetch !== undefined) guard(`queues.${name}.prefetch`, () => intIn(0, 10_000)(settings.prefetch));
    if (settings.timeout !== undefined && settings.timeout !== null)
      guard(`queues.${name}.timeout`, () => parseDuration(settings.timeout as string));
  }
}

function validateSchedules(value: unknown) {
  if (!Array.isArray(value)) throw new Error('must be a list of { name, cron, kind, payload, queue }');
  const names = new Set<string>();
  value.forEach((s: unknown, i: number) => {
    const where = `schedules[${i}]`;
    if (typeof s !== 'object' || s === null || Array.isArray(s)) throw new Error(`${where} must be an object`);
    const sched = s as Record<string, unknown>;
    checkKeys(where, sched, SCHEDULE_KEYS);
    for (const key of ['name', 'cron', 'kind'] as const) {
      if (typeof sched[key] !== 'string' || (sched[key] as string).length === 0)
        throw new Error(`${where}.${key} must be a non-empty string`);
    }
    if (names.has(sched.name as string)) throw new Error(`${where}.name "${String(sched.name)}" is used twice`);
    names.add(sched.name as string);
    if (
      sched.payload !== undefined &&
      (typeof sched.payload !== 'object' || sched.payload === null || Array.isArray(sched.payload))
    ) {
      throw new Error(`${where}.payload must be a JSON object`);
    }
    if (sched.queue !== undefined && (typeof sched.queue !== 'string' || !QUEUE_NAME.test(sched.queue)))
      throw new Error(`${where}.queue must be a queue name`);
    if (sched.priority !== undefined) guard(`${where}.priority`, () => intIn(-1_000_000, 1_000_000)(sched.priority));
    try {
      CronExpressionParser.parse(sched.cron as string, sched.timezone ? { tz: sched.timezone as string } : {});
    } catch (err) {
      throw new Error(
        `${where}.cron "${String(sched.cron)}" is not a valid cron expression: ${(err as Error).message}`,
      );
    }
  });
}

function guard(where: string, check: () => void) {
  try {
    check();
  } catch (err) {
    throw new Error(`${where} ${(err as Error).message}`);
  }
}

const schema = {
  database: {
    url: {
      doc: 'PostgreSQL connection string. Empty: start the embedded PostgreSQL (development only).',
      format: String,
      default: '',
      env: 'DATABASE_URL',
      sensitive: true,
    },
    poolSize: {
      doc: "Connections in the supervisor's pool (plus one for LISTEN).",
      format: intIn(1, 1000),
      default: 10,
      env: 'DATABASE_POOL_SIZE',
    },
    schema: {
      doc: 'Schema holding the jobs table.',
      format: (v: unknown) => {
        if (typeof v !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(v))
          throw new Error('must be a lower-case SQL identifier');
      },
      default: 'jobvisor',
      env: 'JOBVISOR_SCHEMA',
    },
    embedded: {
      dir: {
        doc: 'Data folder of the embedded PostgreSQL.',
        format: String,
        default: '.jobvisor/postgres',
        env: 'JOBVISOR_EMBEDDED_DIR',
      },
      port: {
        doc: 'Port of the embedded PostgreSQL (loopback only).',
        format: 'port',
        default: 54329,
        env: 'JOBVISOR_EMBEDDED_PORT',
      },
    },
  },
  tasks: {
    dir: {
      doc: 'Folder of user tasks: one <kind>.js or <kind>.ts file per kind.',
      format: String,
      default: '',
      env: 'JOBVISOR_TASKS_DIR',
    },
  },
  pool: {
    maxThreads: {
      doc: 'Worker threads in the Piscina pool.',
      format: intIn(1, 256),
      default: availableParallelism(),
      env: 'JOBVISOR_MAX_THREADS',
    },
    idleTimeout: { doc: 'An idle thread above one is closed after this long.', format: timerFormat(0), default: '60s' },
    maxOldGenerationSizeMb: {
      doc: "Heap limit per worker thread in MB (0: Node's default). A task above it fails its job with an out-of-memory error.",
      format: intIn(0, 65_536),
      default: 0,
    },
    maxYoungGenerationSizeMb: {
      doc: "Young-generation limit per worker thread in MB (0: Node's default).",
      format: intIn(0, 4096),
      default: 0,
    },
    stackSizeMb: { doc: "Stack size per worker thread in MB (0: Node's default).", format: intIn(0, 1024), default: 0 },
    dbPoolSize: {
      doc: 'Connections of the pool each worker thread offers tasks as ctx.db (opened lazily).',
      format: intIn(1, 100),
      default: 2,
    },
  },
  queues: {
    doc: 'Queues this supervisor serves: name → { concurrency, jobsPerThread, prefetch, timeout }. Layers merge by queue name.',
    format: Object,
    default: { default: { concurrency: 10, prefetch: 1000 } } as Record<string, Partial<QueueSettings>>,
  },
  jobs: {
    lease: {
      doc: 'Lease of a running job, renewed by heartbeat every lease/3.',
      format: timerFormat(3000),
      default: '15s',
    },
    timeout: {
      doc: 'A job running longer is aborted (its thread terminated) and retried.',
      format: durationFormat,
      default: '5m',
    },
    maxAttempts: {
      doc: 'Attempts for jobs enqueued by the CLI and schedules when none is given.',
      format: intIn(1, 1000),
      default: 8,
    },
    maxPayloadBytes: {
      doc: 'Largest payload enqueue accepts, in bytes of JSON.',
      format: intIn(2, 100 * 1024 * 1024),
      default: 1024 * 1024,
    },
  },
  backoff: {
    base: { doc: 'Delay before the first retry; doubles each attempt.', format: durationFormat, default: '1s' },
    max: { doc: 'Cap on the retry delay.', format: durationFormat, default: '1h' },
    jitter: {
      doc: 'Fraction of the delay drawn at random (0: none, 1: full jitter).',
      format: (v: unknown) => {
        if (typeof v !== 'number' || v < 0 || v > 1) throw new Error('must be a number from 0 to 1');
      },
      default: 0.5,
    },
  },
  poll: {
    interval: { doc: 'Fallback poll when no notification arrives.', format: timerFormat(50), default: '2s' },
  },
  completer: {
    flushInterval: {
      doc: 'Outcomes wait at most this long to be written in one batch.',
      format: timerFormat(0),
      default: '2ms',
    },
    batchSize: { doc: 'Outcomes written per statement at most.', format: intIn(1, 10_000), default: 1000 },
  },
  reaper: {
    interval: { doc: 'How often expired leases are returned to pending.', format: timerFormat(100), default: '5s' },
    batchSize: { doc: 'Expired leases handled per statement.', format: intIn(1, 100_000), default: 1000 },
  },
  cleanup: {
    interval: { doc: 'How often old finished jobs are deleted.', format: timerFormat(1000), default: '1m' },
    retention: {
      doc: 'Done and cancelled jobs are kept this long after they finish.',
      format: durationFormat,
      default: '3d',
    },
    failedRetention: { doc: 'Failed jobs (dead letters) are kept this long.', format: durationFormat, default: '30d' },
    batchSize: { doc: 'Rows deleted per statement.', format: intIn(1, 100_000), default: 1000 },
  },
  scheduler: {
    interval: { doc: 'How often schedules are checked for due fire times.', format: timerFormat(100), default: '1s' },
    catchUp: {
      doc: 'Fire times missed while no supervisor ran are enqueued if younger than this.',
      format: durationFormat,
      default: '1h',
    },
  },
  schedules: {
    doc: 'Recurring jobs: list of { name, cron, kind, payload, queue, priority, timezone }.',
    format: validateSchedules,
    default: [] as unknown[],
  },
  shutdown: {
    grace: {
      doc: 'On SIGTERM running jobs may finish within this long; then they are aborted and handed back.',
      format: timerFormat(0),
      default: '25s',
    },
  },
  metrics: {
    port: {
      doc: 'Port of /metrics, /healthz and /readyz (0: a free port).',
      format: 'port',
      default: 9464,
      env: 'METRICS_PORT',
    },
    host: { doc: 'Address the metrics server binds.', format: String, default: '0.0.0.0', env: 'METRICS_HOST' },
    refresh: { doc: 'Database gauges are re-read at most this often.', format: durationFormat, default: '5s' },
  },
  log: {
    level: {
      doc: 'pino level.',
      format: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
      env: 'LOG_LEVEL',
    },
  },
  supervisor: {
    name: {
      doc: 'Name of this supervisor in logs and locked_by (a process-unique suffix is always added).',
      format: String,
      default: '',
      env: 'JOBVISOR_SUPERVISOR_NAME',
    },
  },
  thumbnails: {
    dir: {
      doc: 'Default output folder of the thumbnail task.',
      format: String,
      default: '.jobvisor/thumbnails',
      env: 'JOBVISOR_THUMBNAILS_DIR',
    },
    format: { doc: 'Image format of thumbnails.', format: ['webp', 'jpeg', 'png', 'avif'], default: 'webp' },
  },
  reports: {
    dir: {
      doc: 'Output folder of the daily_report task.',
      format: String,
      default: '.jobvisor/reports',
      env: 'JOBVISOR_REPORTS_DIR',
    },
  },
};

const DURATION_PATHS = [
  'pool.idleTimeout',
  'jobs.lease',
  'jobs.timeout',
  'backoff.base',
  'backoff.max',
  'poll.interval',
  'completer.flushInterval',
  'reaper.interval',
  'cleanup.interval',
  'cleanup.retention',
  'cleanup.failedRetention',
  'scheduler.interval',
  'scheduler.catchUp',
  'shutdown.grace',
  'metrics.refresh',
];

/**
 * DATABASE_URL_FILE names a file holding the connection string (a mounted
 * Kubernetes or Docker secret): read into DATABASE_URL, which it must not
 * accompany.
 */
function withSecretFile(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const file = env.DATABASE_URL_FILE;
  if (!file) return env;
  if (env.DATABASE_URL) throw new ConfigError('invalid configuration: set DATABASE_URL or DATABASE_URL_FILE, not both');
  let url: string;
  try {
    url = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new ConfigError(
      `invalid configuration: DATABASE_URL_FILE names ${file}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  return { ...env, DATABASE_URL: url };
}

/** The folder holding config/default.json: the package root. */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Extra files applied after the standard layers (tests, the demo). */
  files?: string[];
  /** Values applied last (tests). */
  overrides?: Record<string, unknown>;
  /** Folder holding default.json and $NODE_ENV.json (default: <package>/config). */
  configDir?: string;
}

/**
 * Loads and validates the configuration.
 * @throws ConfigError (code CONFIG_INVALID) naming the bad key.
 */
export function loadConfig(options: LoadOptions = {}): Settings {
  const env = withSecretFile(options.env ?? process.env);
  const config = convict(schema, { env, args: [] });
  const configDir = options.configDir ?? path.join(PACKAGE_ROOT, 'config');
  const files = [path.join(configDir, 'default.json')];
  if (env.NODE_ENV) files.push(path.join(configDir, `${env.NODE_ENV}.json`));
  const layered = files.filter((f) => existsSync(f));
  if (env.JOBVISOR_CONFIG) {
    if (!existsSync(env.JOBVISOR_CONFIG))
      throw new ConfigError(`JOBVISOR_CONFIG names ${env.JOBVISOR_CONFIG}, which does not exist`);
    layered.push(env.JOBVISOR_CONFIG);
  }
  layered.push(...(options.files ?? []));
  try {
    // Files are merged here, deeply (so queues merge by name), then loaded at
    // once; convict keeps environment variables above them.
    let merged: Record<string, unknown> = {};
    for (const file of layered) {
      const layer = readJson(file);
      if (isPlainObject(layer.database) && 'url' in layer.database) {
        throw new ConfigError(
          `invalid configuration: database.url holds credentials and may not be set in ${file} (a ConfigMap is not a secret): use DATABASE_URL or DATABASE_URL_FILE`,
        );
      }
      merged = deepMerge(merged, layer);
    }
    if (options.overrides) merged = deepMerge(merged, options.overrides);
    checkNoNul(merged, '');
    checkUnknownKeys(merged, schema);
    // Before convict sees them: a queue name is a key, and convict would take a dot in it for a path.
    if (merged.queues !== undefined) validateQueues(merged.queues);
    config.load(merged);
    config.validate({ allowed: 'strict' });
    validateQueues(config.get('queues'));
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(explain(err as Error, layered), { cause: err });
  }
  const raw = config.getProperties() as unknown as Settings & Record<string, unknown>;
  return finish(raw);
}

/** No value may hold NUL: no PostgreSQL text, file name or host name can (supervisor.name becomes locked_by). */
function checkNoNul(value: unknown, where: string): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000'))
      throw new ConfigError(`invalid configuration: ${where} contains a NUL character (\\u0000)`);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => checkNoNul(v, `${where}[${i}]`));
  } else if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) checkNoNul(v, where ? `${where}.${k}` : k);
  }
}

/** Every key in the files must exist in the schema (convict misses empty objects). */
function checkUnknownKeys(value: Record<string, unknown>, node: Record<string, unknown>, prefix = ''): void {
  for (const [key, child] of Object.entries(value)) {
    const here = prefix ? `${prefix}.${key}` : key;
    const spec = node[key] as Record<string, unknown> | undefined;
    if (!spec || typeof spec !== 'object') {
      const near = closestKey(here, allKeys(schema).concat(Object.keys(schema)));
      throw new ConfigError(
        `invalid configuration: unknown key ${JSON.stringify(here)}${near ? ` (did you mean "${near}"?)` : ''}`,
      );
    }
    if (!('default' in spec) && isPlainObject(child)) checkUnknownKeys(child, spec, here);
  }
}

function readJson(file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(value)) throw new ConfigError(`invalid configuration: ${file} must hold a JSON object`);
  return value;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    if (key === '__proto__' || key === 'constructor') continue;
    out[key] =
      isPlainObject(value) && isPlainObject(out[key]) ? deepMerge(out[key] as Record<string, unknown>, value) : value;
  }
  return out;
}

function explain(err: Error, files: string[]): string {
  const lines = err.message.split('\n').map((line) => {
    const m = /configuration param '([^']+)' not declared in the schema/.exec(line);
    if (!m) return line;
    const key = m[1] as string;
    const near = closestKey(key, allKeys(schema));
    return `unknown key "${key}"${near ? ` (did you mean "${near}"?)` : ''}`;
  });
  const where = files.length ? ` (files: ${files.join(', ')})` : '';
  return `invalid configuration: ${lines.join('; ')}${where}`;
}

function allKeys(node: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(node).flatMap(([key, value]) => {
    const here = prefix ? `${prefix}.${key}` : key;
    const spec = value as Record<string, unknown>;
    return spec && typeof spec === 'object' && !('default' in spec) ? allKeys(spec, here) : [here];
  });
}

function finish(raw: Record<string, unknown>): Settings {
  for (const p of DURATION_PATHS) {
    const [a, b] = p.split('.') as [string, string];
    const section = raw[a] as Record<string, unknown>;
    section[b] = parseDuration(section[b] as string | number);
  }
  const settings = raw as unknown as Settings;
  const queues: Record<string, QueueSettings> = {};
  const given = settings.queues as unknown as Record<
    string,
    Partial<QueueSettings> & { timeout?: string | number | null }
  >;
  if (!given.default) given.default = {};
  for (const [name, q] of Object.entries(given)) {
    queues[name] = {
      concurrency: q.concurrency ?? 10,
      jobsPerThread: q.jobsPerThread ?? 1,
      prefetch: q.prefetch ?? 0,
      timeout: q.timeout === undefined || q.timeout === null ? null : parseDuration(q.timeout),
    };
  }
  settings.queues = queues;
  settings.schedules = (settings.schedules as unknown as Array<Partial<Schedule>>).map((s) => ({
    name: s.name as string,
    cron: s.cron as string,
    kind: s.kind as string,
    payload: s.payload ?? {},
    queue: s.queue ?? 'default',
    priority: s.priority ?? 0,
    timezone: s.timezone ?? null,
  }));
  if (settings.jobs.lease < 3000)
    throw new ConfigError('invalid configuration: jobs.lease must be at least 3s (heartbeats run every lease/3)');
  return settings;
}

/** Settings with every secret replaced, safe to log. */
export function redacted(settings: Settings): Settings {
  return { ...settings, database: { ...settings.database, url: settings.database.url ? '[redacted]' : '' } };
}
