// Command-line parsing for run.mjs. Every mistake is a UsageError naming the flag.
export const SYSTEMS = ['graphile-fast', 'graphile-default', 'pgboss', 'bullmq-pg', 'classic'];
export const SCENARIOS = ['enqueue', 'process', 'pickup', 'burst', 'cold', 'perkey'];
/** The peers with a per-key limit of one job at a time (the perkey scenario); the others refuse it. */
export const PERKEY_SYSTEMS = ['graphile-fast', 'graphile-default', 'pgboss'];

export class UsageError extends Error {
  code = 'EUSAGE';
}

const FLAGS = {
  system: 'string',
  scenario: 'string',
  jobs: 'int',
  concurrency: 'int',
  processes: 'int',
  keys: 'int',
  'database-url': 'string',
  'timeout-seconds': 'int',
  keep: 'bool',
  tune: 'json',
};

/** Parses argv (without node and script) into options; throws UsageError. */
export function parseArgs(argv) {
  const raw = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument "${arg}"`);
    let [name, value] = arg.slice(2).split(/=(.*)/s, 2);
    const type = FLAGS[name];
    if (!type) throw new UsageError(`unknown flag --${name}`);
    if (type === 'bool') {
      raw[name] = value === undefined ? true : value !== 'false';
      continue;
    }
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
    }
    if (type === 'json') {
      try {
        raw[name] = JSON.parse(value);
      } catch {
        throw new UsageError(`--${name} must be a JSON object, got "${value}"`);
      }
      if (raw[name] === null || typeof raw[name] !== 'object' || Array.isArray(raw[name])) {
        throw new UsageError(`--${name} must be a JSON object`);
      }
    } else if (type === 'int') {
      if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
      raw[name] = Number(value);
    } else {
      raw[name] = value;
    }
  }
  if (!SYSTEMS.includes(raw.system)) throw new UsageError(`--system must be one of ${SYSTEMS.join('|')}`);
  if (!SCENARIOS.includes(raw.scenario)) throw new UsageError(`--scenario must be one of ${SCENARIOS.join('|')}`);
  const databaseUrl = raw['database-url'] ?? process.env.DATABASE_URL;
  if (!databaseUrl) throw new UsageError('--database-url is required');
  if (raw.scenario === 'perkey' && !PERKEY_SYSTEMS.includes(raw.system)) {
    throw new UsageError(
      `${raw.system} has no per-key limit (one job at a time per key), so it cannot run perkey (it runs on ${PERKEY_SYSTEMS.join('|')})`,
    );
  }
  if (raw.scenario === 'perkey' && (raw.processes ?? 1) > 1) {
    throw new UsageError('perkey runs one worker process (--processes 1): it checks per-key overlap in that process');
  }
  return {
    system: raw.system,
    scenario: raw.scenario,
    jobs: raw.jobs ?? (raw.scenario === 'pickup' ? 200 : 20000),
    concurrency: raw.concurrency ?? 50,
    processes: raw.processes ?? 1,
    keys: raw.keys ?? 1000,
    databaseUrl,
    timeoutSeconds: raw['timeout-seconds'] ?? 600,
    keep: raw.keep ?? false,
    tune: raw.tune ?? {},
  };
}
