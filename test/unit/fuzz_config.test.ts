/**
 * Fuzz: configuration files and environment variables with random and hostile
 * values (seeded; FUZZ_SEED replays). Every case either loads into settings a
 * supervisor can run with, or stops with ConfigError naming the key (or the
 * environment variable, or the file). Nothing else may escape, and
 * nothing unusable may load: in particular every duration that drives a timer
 * must be one a Node timer can hold without turning into a busy loop.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig, type Settings } from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors.ts';
import { int, NASTY_STRINGS, pick, type Random } from '../helpers/chaos/hostile.ts';
import { prng, report } from '../helpers/chaos/measure.ts';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 600;
const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-fuzz-config-'));
const emptyConfigDir = mkdtempSync(path.join(tmpdir(), 'jobvisor-fuzz-configdir-'));

after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(emptyConfigDir, { recursive: true, force: true });
});

/** Every file key, with a legal value. */
const BASE = {
  database: { poolSize: 10, schema: 'jobvisor', embedded: { dir: '.jobvisor/postgres', port: 54329 } },
  tasks: { dir: '' },
  pool: {
    maxThreads: 2,
    idleTimeout: '60s',
    maxOldGenerationSizeMb: 0,
    maxYoungGenerationSizeMb: 0,
    stackSizeMb: 0,
    dbPoolSize: 2,
  },
  queues: {
    default: { concurrency: 10, jobsPerThread: 10, prefetch: 0, timeout: '5m' },
    cpu: { concurrency: 2, jobsPerThread: 1 },
  },
  jobs: { lease: '15s', timeout: '5m', maxAttempts: 8, maxPayloadBytes: 1_048_576 },
  backoff: { base: '1s', max: '1h', jitter: 0.5 },
  poll: { interval: '2s' },
  completer: { flushInterval: '2ms', batchSize: 1000 },
  reaper: { interval: '5s', batchSize: 1000 },
  cleanup: { interval: '1m', retention: '3d', failedRetention: '30d', batchSize: 1000 },
  scheduler: { interval: '1s', catchUp: '1h' },
  schedules: [
    {
      name: 'nightly',
      cron: '0 3 * * *',
      kind: 'daily_report',
      payload: {},
      queue: 'default',
      priority: 0,
      timezone: 'UTC',
    },
  ],
  shutdown: { grace: '25s' },
  metrics: { port: 9464, host: '0.0.0.0', refresh: '5s' },
  log: { level: 'info' },
  supervisor: { name: 'fuzz' },
  thumbnails: { dir: '.jobvisor/thumbnails', format: 'webp' },
  reports: { dir: '.jobvisor/reports' },
};

/** Durations that set timers, in ms after loading: a Node timer holds 1 ms to 2^31 - 1 ms; loops need a floor. */
const TIMERS: Array<[string, (s: Settings) => number, number]> = [
  ['pool.idleTimeout', (s) => s.pool.idleTimeout, 0],
  ['jobs.lease', (s) => s.jobs.lease, 3000],
  ['poll.interval', (s) => s.poll.interval, 1],
  ['completer.flushInterval', (s) => s.completer.flushInterval, 0],
  ['reaper.interval', (s) => s.reaper.interval, 1],
  ['cleanup.interval', (s) => s.cleanup.interval, 1],
  ['scheduler.interval', (s) => s.scheduler.interval, 1],
  ['shutdown.grace', (s) => s.shutdown.grace, 0],
];
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a loaded configuration must satisfy for a supervisor to run with it. */
function unusable(s: Settings): string | null {
  for (const [key, get, min] of TIMERS) {
    const ms = get(s);
    if (!Number.isFinite(ms) || ms < min || ms > MAX_TIMER_MS)
      return `${key} = ${ms} ms: a timer cannot hold it (Node fires after 1 ms)`;
  }
  for (const [name, q] of Object.entries(s.queues)) {
    if (!Number.isInteger(q.concurrency) || q.concurrency < 1) return `queues.${name}.concurrency = ${q.concurrency}`;
    if (!Number.isInteger(q.jobsPerThread) || q.jobsPerThread < 1)
      return `queues.${name}.jobsPerThread = ${q.jobsPerThread}`;
  }
  const texts: Array<[string, string]> = [
    ['supervisor.name', s.supervisor.name],
    ['tasks.dir', s.tasks.dir],
    ['metrics.host', s.metrics.host],
    ['thumbnails.dir', s.thumbnails.dir],
    ['reports.dir', s.reports.dir],
  ];
  for (const [key, text] of texts)
    if (typeof text !== 'string' || text.includes('\u0000'))
      return `${key} holds a NUL character: no file name, host name or PostgreSQL text can`;
  return null;
}

function leaves(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, `${prefix}[${i}]`));
  if (typeof value !== 'object' || value === null || Object.keys(value).length === 0) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

function sections(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const here = prefix ? [prefix] : [];
  return [...here, ...Object.entries(value).flatMap(([k, v]) => sections(v, prefix ? `${prefix}.${k}` : k))];
}

/** Sets `path` ("a.b[0].c") in `target`. */
function setPath(target: Record<string, unknown>, where: string, value: unknown): void {
  const parts = where.match(/[^.[\]]+/g) as string[];
  let node = target;
  for (const p of parts.slice(0, -1)) node = node[p] as Record<string, unknown>;
  node[parts[parts.length - 1] as string] = value;
}

const HOSTILE_VALUES: unknown[] = [
  -1,
  0,
  1,
  1.5,
  1e308,
  -1e308,
  2 ** 53,
  65_536,
  999_999_999,
  '',
  ' ',
  'abc',
  '30x',
  '-5s',
  '1e400s',
  '99999999999d',
  '10y',
  '25d',
  '24d',
  '0ms',
  '1ms',
  'NaN',
  null,
  true,
  false,
  [],
  {},
  { a: 1 },
  [1, 2],
  'x'.repeat(5000),
  '\u0000',
  'a\u0000b',
  'a\nb',
  '\r\n',
  "'; DROP TABLE jobvisor.jobs; --",
  '${HOME}',
  '../../..',
  '🚀',
];

interface Case {
  file?: unknown;
  raw?: string;
  env?: Record<string, string>;
  /** The key, variable or file the error must name (any of them). */
  names: string[];
  note: string;
}

function typo(random: Random, key: string): string {
  if (key.length < 2) return `${key}x`;
  const i = int(random, 0, key.length - 1);
  return random() < 0.5
    ? key.slice(0, i) + key.slice(i + 1)
    : key.slice(0, i) + key.charAt(i).toUpperCase() + key.slice(i + 1);
}

function randomCase(random: Random): Case {
  const file = structuredClone(BASE) as Record<string, unknown>;
  const r = random();
  if (r < 0.45) {
    const where = pick(random, leaves(BASE));
    setPath(file, where, pick(random, HOSTILE_VALUES));
    return { file, names: [where], note: `leaf ${where}` };
  }
  if (r < 0.6) {
    const parent = pick(
      random,
      sections(BASE).filter((s) => s !== 'queues' && !s.startsWith('queues.') && !s.startsWith('schedules')),
    );
    const siblings = Object.keys(
      parent.split('.').reduce<Record<string, unknown>>((n, p) => n[p] as Record<string, unknown>, file),
    );
    const key =
      random() < 0.6
        ? typo(random, pick(random, siblings))
        : pick(
            random,
            NASTY_STRINGS.filter((s) => s && !siblings.includes(s) && !s.includes('.')),
          );
    if (siblings.includes(key)) return randomCase(random);
    setPath(file, `${parent}.${key}`, 1);
    return { file, names: [`${parent}.${key}`], note: `unknown key ${parent}.${key}` };
  }
  if (r < 0.68) {
    const where = pick(random, sections(BASE));
    setPath(file, where, pick(random, ['text', 5, [], null, true]));
    return { file, names: [where], note: `section ${where} replaced` };
  }
  if (r < 0.8) {
    const name = random() < 0.5 ? pick(random, ['default', 'q', 'a:b', 'x-y']) : pick(random, NASTY_STRINGS);
    const settings: Record<string, unknown> = {};
    for (const k of ['concurrency', 'jobsPerThread', 'prefetch', 'timeout', typo(random, 'concurrency')])
      if (random() < 0.4) settings[k] = random() < 0.5 ? int(random, 1, 50) : pick(random, HOSTILE_VALUES);
    (file.queues as Record<string, unknown>)[name] = random() < 0.9 ? settings : pick(random, HOSTILE_VALUES);
    return {
      file,
      names: [`queues.${name}`, `queue name ${JSON.stringify(name)}`, 'queues'],
      note: `queue ${JSON.stringify(name)}`,
    };
  }
  if (r < 0.9) {
    const field = pick(random, [
      'name',
      'cron',
      'kind',
      'payload',
      'queue',
      'priority',
      'timezone',
      typo(random, 'cron'),
    ]);
    const value = pick(random, [
      ...HOSTILE_VALUES,
      '* * * * * * *',
      '61 * * * *',
      'Mars/Olympus',
      'Europe/Paris',
      '@daily',
    ]);
    setPath(file, `schedules[0].${field}`, value);
    return { file, names: [`schedules[0].${field}`, `schedules[0]`], note: `schedule field ${field}` };
  }
  const variable = pick(random, [
    'DATABASE_POOL_SIZE',
    'METRICS_PORT',
    'LOG_LEVEL',
    'JOBVISOR_MAX_THREADS',
    'JOBVISOR_SCHEMA',
    'METRICS_HOST',
    'JOBVISOR_SUPERVISOR_NAME',
  ]);
  const keyOf: Record<string, string> = {
    DATABASE_POOL_SIZE: 'database.poolSize',
    METRICS_PORT: 'metrics.port',
    LOG_LEVEL: 'log.level',
    JOBVISOR_MAX_THREADS: 'pool.maxThreads',
    JOBVISOR_SCHEMA: 'database.schema',
    METRICS_HOST: 'metrics.host',
    JOBVISOR_SUPERVISOR_NAME: 'supervisor.name',
  };
  const value = pick(random, [
    '',
    ' ',
    '0',
    '-1',
    '1.5',
    '65536',
    '99999999999999999999',
    'abc',
    '1e3',
    '0x10',
    'debug',
    'Jobvisor',
    'a;b',
    '10 ',
    '\t7',
  ]);
  return {
    file,
    env: { [variable]: value },
    names: [variable, keyOf[variable] as string],
    note: `env ${variable}=${JSON.stringify(value)}`,
  };
}

let caseNo = 0;
function load(c: Case): Settings {
  const file = path.join(dir, `case-${caseNo++}.json`);
  writeFileSync(file, c.raw ?? JSON.stringify(c.file));
  return loadConfig({ configDir: emptyConfigDir, env: { ...c.env, JOBVISOR_CONFIG: file } });
}

describe('fuzz: configuration', () => {
  it('the base configuration of this fuzzer is valid', () => {
    const s = load({ file: BASE, names: [], note: 'base' });
    assert.equal(unusable(s), null);
  });

  it(`${CASES} random and hostile configurations: usable settings, or ConfigError naming the key (seed ${SEED})`, () => {
    const random = prng(SEED);
    const failures: string[] = [];
    let loaded = 0;
    let refused = 0;
    for (let i = 0; i < CASES; i++) {
      const c = randomCase(random);
      try {
        const s = load(c);
        loaded++;
        const why = unusable(s);
        if (why) failures.push(`#${i} ${c.note}: loaded but unusable: ${why}`);
      } catch (err) {
        if (!(err instanceof ConfigError)) {
          failures.push(
            `#${i} ${c.note}: ${(err as Error).name} instead of ConfigError: ${(err as Error).message.split('\n')[0]}`,
          );
          continue;
        }
        refused++;
        // The key may be quoted as JSON (a key holding a quote or a control character); the CLI
        // folds whatever a message quotes onto one line (test/system/fuzz_cli.test.ts checks that).
        if (!c.names.some((n) => err.message.includes(n) || err.message.includes(JSON.stringify(n).slice(1, -1))))
          failures.push(`#${i} ${c.note}: message does not name ${c.names.join(' or ')}: ${err.message.slice(0, 200)}`);
      }
    }
    report('fuzz.config', {
      seed: SEED,
      cases: CASES,
      loaded,
      refused,
      failures: failures.length,
      firstFailures: failures.slice(0, 8),
    });
    assert.deepEqual(failures.slice(0, 15), [], `${failures.length} failing cases (FUZZ_SEED=${SEED})`);
  });

  it('broken files are refused naming the file', () => {
    const cases: Array<[string, RegExp]> = [
      ['{ "jobs": ', /not valid JSON/],
      ['[1, 2]', /must hold a JSON object/],
      ['', /not valid JSON/],
      ['\ufeff{"jobs": {"maxAttempts": 3}}', /not valid JSON|maxAttempts/],
      ['{"jobs": {"maxAttempts": 1e400}}', /jobs\.maxAttempts/],
      ['{"jobs": {"maxAttempts": 3}, "jobs": {"maxAttempts": "x"}}', /jobs\.maxAttempts/],
      ['null', /must hold a JSON object/],
    ];
    for (const [raw, message] of cases) {
      let error: unknown;
      try {
        load({ raw, names: [], note: raw });
      } catch (err) {
        error = err;
      }
      assert.ok(error instanceof ConfigError, `${JSON.stringify(raw)}: ${String(error)}`);
      assert.match(error.message, message, JSON.stringify(raw));
      assert.doesNotMatch(error.message, /[\r\n]/);
    }
  });
});
