import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig, redacted } from '../../src/config/index.ts';
import { PACKAGE_ROOT } from '../../src/paths.ts';
import { ConfigError } from '../../src/errors.ts';
import { retryDelay } from '../../src/supervisor/backoff.ts';

const CONFIG_DIR = path.join(PACKAGE_ROOT, 'config');

function dirWith(files: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-config-'));
  for (const [name, value] of Object.entries(files))
    writeFileSync(path.join(dir, name), typeof value === 'string' ? value : JSON.stringify(value));
  return dir;
}

describe('configuration', () => {
  it('layers defaults, default.json, $NODE_ENV.json, JOBVISOR_CONFIG and env, later wins; queues merge by name', () => {
    const dir = dirWith({
      'default.json': {
        queues: { default: { concurrency: 5 }, cpu: { concurrency: 2, jobsPerThread: 1 } },
        jobs: { lease: '20s' },
      },
      'staging.json': { jobs: { lease: '30s', timeout: '1m' } },
      'mounted.json': { queues: { cpu: { concurrency: 3 } }, jobs: { timeout: '2m' }, metrics: { port: 1234 } },
    });
    const s = loadConfig({
      configDir: dir,
      env: {
        NODE_ENV: 'staging',
        JOBVISOR_CONFIG: path.join(dir, 'mounted.json'),
        METRICS_PORT: '9999',
        DATABASE_URL: 'postgres://u:secret@db/x',
        JOBVISOR_TASKS_DIR: '/tasks',
      },
    });
    assert.equal(s.jobs.lease, 30_000);
    assert.equal(s.jobs.timeout, 120_000);
    assert.equal(s.metrics.port, 9999, 'environment beats files');
    assert.equal(s.database.url, 'postgres://u:secret@db/x');
    assert.equal(s.tasks.dir, '/tasks');
    assert.deepEqual(s.queues.cpu, { concurrency: 3, jobsPerThread: 1, prefetch: 0, timeout: null });
    assert.equal(s.queues.default?.concurrency, 5);
    assert.equal(redacted(s).database.url, '[redacted]');
  });

  it('reads durations as milliseconds', () => {
    const s = loadConfig({
      configDir: dirWith({}),
      env: {},
      overrides: { shutdown: { grace: '90s' }, cleanup: { retention: '3d' }, completer: { flushInterval: '5ms' } },
    });
    assert.equal(s.shutdown.grace, 90_000);
    assert.equal(s.cleanup.retention, 3 * 86_400_000);
    assert.equal(s.completer.flushInterval, 5);
  });

  it('rejects unknown and mistyped keys, naming them', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ jobz: {} }, /unknown key "jobz".*"jobs"/],
      [{ pool: { maxThread: 2 } }, /unknown key "pool\.maxThread".*"pool\.maxThreads"/],
      [{ pool: { maxThreads: 'two' } }, /pool\.maxThreads/],
      [{ jobs: { lease: '1s' } }, /jobs\.lease: must be from 3000 ms/],
      [{ jobs: { timeout: 'later' } }, /jobs\.timeout/],
      [{ queues: { 'bad name': {} } }, /queue name "bad name"/],
      [{ queues: { emails: { concurrency: 0 } } }, /queues\.emails\.concurrency must be an integer from 1/],
      [{ schedules: [{ name: 'x', cron: 'not a cron', kind: 'k' }] }, /schedules\[0\]\.cron/],
      [{ schedules: [{ name: 'x', cron: '* * * * *', kind: 'k', every: 1 }] }, /unknown key "schedules\[0\]\.every"/],
      [{ log: { level: 'loud' } }, /log\.level/],
      [{ jobs: { maxSnoozes: -1 } }, /jobs\.maxSnoozes/],
      [{ jobs: { maxSnoozes: 1.5 } }, /jobs\.maxSnoozes/],
      [{ jobs: { maxResultBytes: '64KiB' } }, /jobs\.maxResultBytes/],
      [{ jobs: { maxResultBytes: 1 } }, /jobs\.maxResultBytes/],
      [{ jobs: { maxSnooze: 3 } }, /unknown key "jobs\.maxSnooze".*"jobs\.maxSnoozes"/],
    ];
    for (const [overrides, message] of cases) {
      assert.throws(
        () => loadConfig({ configDir: dirWith({}), env: {}, overrides }),
        (err: Error) => err instanceof ConfigError && message.test(err.message),
        JSON.stringify(overrides),
      );
    }
    assert.throws(
      () => loadConfig({ configDir: dirWith({ 'default.json': '{ nope' }), env: {} }),
      /default\.json is not valid JSON/,
    );
    assert.throws(
      () => loadConfig({ configDir: dirWith({}), env: { JOBVISOR_CONFIG: '/no/such/file.json' } }),
      /does not exist/,
    );
  });

  it('the shipped config files are valid', () => {
    for (const NODE_ENV of ['', 'production']) loadConfig({ env: { NODE_ENV } });
  });

  it('the example files in config/ load as JOBVISOR_CONFIG and say what they show', () => {
    const examples = readdirSync(CONFIG_DIR).filter((f) => /^example\..+\.json$/.test(f));
    assert.deepEqual(examples.sort(), ['example.first.json', 'example.production.json']);
    const load = (file: string) => loadConfig({ env: { JOBVISOR_CONFIG: path.join(CONFIG_DIR, file) } });
    assert.equal(load('example.first.json').queues.default?.concurrency, 50);
    const production = load('example.production.json');
    assert.equal(production.queues.payments?.globalConcurrency, 5);
    assert.equal(production.queues.crm?.perKeyConcurrency, 1);
    assert.deepEqual(production.queues.geo?.rateLimit, { count: 100, periodMs: 1000, perKey: false });
    assert.equal(production.schedules[0]?.kind, 'daily_report');
    assert.ok(production.tasks.builtins.includes('daily_report'), 'its scheduled built-in is enabled');
  });
});

describe('backoff', () => {
  it('grows exponentially from the base, is capped, and jitters downward', () => {
    const settings = { base: 1000, max: 60_000, jitter: 0 };
    assert.deepEqual(
      [1, 2, 3, 4].map((a) => retryDelay(a, settings)),
      [1000, 2000, 4000, 8000],
    );
    assert.equal(retryDelay(30, settings), 60_000);
    assert.equal(
      retryDelay(3, { ...settings, jitter: 0.5 }, () => 1),
      2000,
    );
    assert.equal(
      retryDelay(3, { ...settings, jitter: 0.5 }, () => 0),
      4000,
    );
  });
});
