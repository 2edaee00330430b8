/**
 * Loading: schema defaults → config/default.json → config/demo.json →
 * config/$NODE_ENV.json (each if present, from jobvisor's own folder; demo.json,
 * the built-in tasks with their `cpu` queue and nightly report, is in the
 * repository and jobvisor's image, not in the npm package) → the app's file: the one named
 * by JOBVISOR_CONFIG, else ./jobvisor.config.json, else ./config/jobvisor.json
 * in the working directory (appConfigFile) → environment variables, later
 * wins. An unknown or mistyped key stops start-up with a message that names it
 * (and the nearest valid key). Durations are written as "30s", "5m" and come out
 * as milliseconds. Secrets (database.url, database.directUrl) come only from the environment
 * (DATABASE_URL, DATABASE_DIRECT_URL) or a mounted secret file (DATABASE_URL_FILE), never from a
 * configuration file, and are marked sensitive so convict never prints them.
 */
import convict from 'convict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDuration } from '../duration.ts';
import { ConfigError, messageOf } from '../errors.ts';
import { PACKAGE_ROOT } from '../paths.ts';
import { closestKey } from '../suggest.ts';
import { effectiveQueueLimits } from './limits.ts';
import { schema, type QueueInput, type ScheduleInput } from './schema.ts';
import type { Settings } from './settings.ts';
import {
  allKeys,
  checkNoNul,
  checkReservedKeys,
  checkUnknownKeys,
  isLeaf,
  isPlainObject,
  validateQueues,
} from './validate.ts';

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Extra files applied after the standard layers (tests, the demo). */
  files?: string[];
  /** Values applied last (tests). */
  overrides?: Record<string, unknown>;
  /** Folder holding default.json and $NODE_ENV.json (default: <package>/config). */
  configDir?: string;
  /** Folder where the app's config file is looked for (default: the working directory). */
  cwd?: string;
  /** false: schema defaults, `files` and `overrides` only (no package layers, no app file; run()). */
  standardLayers?: boolean;
}

/**
 * jobvisor's own layers, read from its folder when present, before
 * config/$NODE_ENV.json. The package ships default.json (nothing an app would
 * not expect); demo.json (the built-in tasks enabled, the `cpu` queue, the
 * daily report schedule) is the repository's and its image's, never the package's.
 */
export const PACKAGE_LAYERS = ['default.json', 'demo.json'];

/** The app's config files looked for in the working directory, in order; the first present is read. */
export const APP_CONFIG_FILES = ['jobvisor.config.json', path.join('config', 'jobvisor.json')];

/**
 * The app's config file: the one JOBVISOR_CONFIG names (which must exist), else
 * the first of APP_CONFIG_FILES present in `cwd`, else none.
 * @throws ConfigError when JOBVISOR_CONFIG names a missing file.
 */
export function appConfigFile(env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  if (env.JOBVISOR_CONFIG) {
    if (!existsSync(env.JOBVISOR_CONFIG))
      throw new ConfigError(`JOBVISOR_CONFIG names ${env.JOBVISOR_CONFIG}, which does not exist`);
    return env.JOBVISOR_CONFIG;
  }
  return APP_CONFIG_FILES.map((f) => path.resolve(cwd, f)).find((f) => existsSync(f));
}

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

/**
 * The working directory's config/default.json and config/$NODE_ENV.json, when
 * present and not jobvisor's own: an app may expect them read (the node-config
 * habit), and they are not. `jobvisor start` warns about each.
 */
export function unreadConfigFiles(env: NodeJS.ProcessEnv, cwd: string, configDir = path.join(PACKAGE_ROOT, 'config')) {
  const names = ['default.json', ...(env.NODE_ENV ? [`${env.NODE_ENV}.json`] : [])];
  if (path.resolve(cwd, 'config') === path.resolve(configDir)) return [];
  return names.map((n) => path.resolve(cwd, 'config', n)).filter((f) => existsSync(f));
}

/**
 * Loads and validates the configuration.
 * @throws ConfigError (code CONFIG_INVALID) naming the bad key.
 */
export function loadConfig(options: LoadOptions = {}): Settings {
  const env = withSecretFile(options.env ?? process.env);
  const config = convict(schema, { env, args: [] });
  const layered: string[] = [];
  if (options.standardLayers !== false) {
    const configDir = options.configDir ?? path.join(PACKAGE_ROOT, 'config');
    const files = PACKAGE_LAYERS.map((name) => path.join(configDir, name));
    if (env.NODE_ENV) files.push(path.join(configDir, `${env.NODE_ENV}.json`));
    layered.push(...files.filter((f) => existsSync(f)));
    const appFile = appConfigFile(env, options.cwd ?? process.cwd());
    if (appFile !== undefined && !layered.includes(path.resolve(appFile))) layered.push(appFile);
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
      if (isPlainObject(layer.database) && 'directUrl' in layer.database) {
        throw new ConfigError(
          `invalid configuration: database.directUrl holds credentials and may not be set in ${file} (a ConfigMap is not a secret): use DATABASE_DIRECT_URL`,
        );
      }
      checkReservedKeys(layer, '');
      merged = deepMerge(merged, layer);
    }
    if (options.overrides) {
      checkReservedKeys(options.overrides, '');
      merged = deepMerge(merged, options.overrides);
    }
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
  return resolve(config.getProperties());
}

function readJson(file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${file} is not valid JSON: ${messageOf(err)}`);
  }
  if (!isPlainObject(value)) throw new ConfigError(`invalid configuration: ${file} must hold a JSON object`);
  return value;
}

/** Reserved keys were refused before (checkReservedKeys), so every key here is data. */
function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const before = out[key];
    out[key] = isPlainObject(value) && isPlainObject(before) ? deepMerge(before, value) : value;
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

/** Values of the keys tagged `duration` in the schema, turned into milliseconds. */
function parseDurations(value: Record<string, unknown>, node: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const spec = node[key];
    if (isLeaf(spec)) out[key] = spec.duration ? parseDuration(v as string | number) : v;
    else out[key] = isPlainObject(spec) && isPlainObject(v) ? parseDurations(v, spec) : v;
  }
  return out;
}

/** Convict's values → Settings: durations in ms, queue and schedule defaults filled in. */
function resolve(loaded: unknown): Settings {
  // The one cast: convict's values have the schema's shape, with the
  // `duration` keys still as text until parseDurations has run.
  const raw = parseDurations(loaded as Record<string, unknown>, schema) as Omit<Settings, 'queues' | 'schedules'> & {
    queues: Record<string, QueueInput>;
    schedules: ScheduleInput[];
  };
  const given = { default: {}, ...raw.queues };
  const settings: Settings = {
    ...raw,
    queues: effectiveQueueLimits({ pool: raw.pool, queues: given }).queues,
    schedules: raw.schedules.map((s) => ({
      name: s.name,
      cron: s.cron,
      kind: s.kind,
      payload: s.payload ?? {},
      queue: s.queue ?? 'default',
      priority: s.priority ?? 0,
      timezone: s.timezone ?? null,
    })),
  };
  if (settings.jobs.lease < 3000)
    throw new ConfigError('invalid configuration: jobs.lease must be at least 3s (heartbeats run every lease/3)');
  return settings;
}

/** Settings with every secret replaced, safe to log. */
export function redacted(settings: Settings): Settings {
  const hide = (url: string) => (url ? '[redacted]' : '');
  return {
    ...settings,
    database: { ...settings.database, url: hide(settings.database.url), directUrl: hide(settings.database.directUrl) },
  };
}
