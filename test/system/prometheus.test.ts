/**
 * A real scrape: a real Prometheus server (Debian's `prometheus`; set PROMETHEUS to
 * use another binary; skipped with the install command when missing, see helpers/tools.ts) scrapes a real supervisor on loopback, evaluates a copy of
 * grafana/alerts.yml every second, and JobvisorDeadLettersGrowing must go pending
 * and then firing once jobs of a kind that always fails become dead letters.
 *
 * Only the `for:` durations of the copy are shortened (to 1s), so firing follows
 * pending within seconds; the expressions are the ones shipped. Every wait polls
 * Prometheus' HTTP API with a deadline; no step sleeps blindly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { stringify as stringifyYaml } from 'yaml';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { freePort } from '../helpers/chaos/postgres.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { spawnSupervisor } from '../helpers/supervisor.ts';
import { findTool, PROMETHEUS, skipUnless } from '../helpers/tools.ts';

const grafanaDir = fileURLToPath(new URL('../../grafana/', import.meta.url));
const prometheusBin = findTool(PROMETHEUS) ?? 'prometheus';
const KIND = 'always_fails';
const OK_KIND = 'always_succeeds';
const POLL_MS = 250;

type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>;
type Supervisor = Awaited<ReturnType<typeof spawnSupervisor>>;
interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: string;
}
interface Target {
  health: string;
  lastError: string;
  scrapeUrl: string;
  labels: Record<string, string>;
}
interface RuleGroup {
  rules: { name: string; type: string; health: string; lastError?: string }[];
}

function isRunning(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Sends `signal`, then SIGKILL if the child has not exited within `graceMs`; resolves once it has exited. */
async function terminate(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

describe('a real Prometheus scraping a real supervisor', { timeout: 180_000, skip: skipUnless(PROMETHEUS) }, () => {
  let scratch: string | undefined;
  let db: TestDatabase | undefined;
  let supervisor: Supervisor | undefined;
  let prometheus: ChildProcess | undefined;
  let prometheusUrl: string;
  const prometheusLogs: string[] = [];

  /** Polls `probe` until it returns a value; fails with Prometheus' last log lines on timeout or exit. */
  async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let lastError: unknown;
    for (;;) {
      if (prometheus && (prometheus.exitCode !== null || prometheus.signalCode !== null)) {
        throw new Error(`prometheus exited while waiting for ${what}:\n${prometheusLogs.slice(-20).join('')}`);
      }
      try {
        const value = await probe();
        if (value !== undefined) return value;
      } catch (error) {
        lastError = error;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}:\n${prometheusLogs.slice(-20).join('')}`, {
          cause: lastError,
        });
      }
      await delay(POLL_MS);
    }
  }

  async function api<T>(pathAndQuery: string): Promise<T> {
    const response = await fetch(`${prometheusUrl}${pathAndQuery}`, { signal: AbortSignal.timeout(5_000) });
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${pathAndQuery}: ${body.error ?? response.status}`);
    return body.data;
  }

  async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
    const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
      `/api/v1/query?query=${encodeURIComponent(expr)}`,
    );
    return data.result;
  }

  async function alerts(name: string): Promise<Alert[]> {
    const data = await api<{ alerts: Alert[] }>('/api/v1/alerts');
    return data.alerts.filter((alert) => alert.labels.alertname === name);
  }

  before(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'jobvisor-prometheus-'));
    const tasksDir = path.join(scratch, 'tasks');
    await mkdir(tasksDir);
    // ES modules: a task folder outside any package needs its own "type": "module".
    await writeFile(path.join(tasksDir, 'package.json'), '{ "type": "module" }\n');
    await writeFile(
      path.join(tasksDir, `${KIND}.js`),
      "export default async () => { throw new Error('this task always fails'); };\n",
    );
    await writeFile(path.join(tasksDir, `${OK_KIND}.js`), 'export default async () => ({ ok: true });\n');

    db = await createTestDatabase();
    supervisor = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir,
      config: {
        metrics: { port: 0, host: '127.0.0.1', refresh: '1s' },
        pool: { maxThreads: 1 },
        queues: { default: { concurrency: 4 } },
      },
    });

    const rules = (await readFile(path.join(grafanaDir, 'alerts.yml'), 'utf8')).replace(
      /^(\s+for:\s*)\S+$/gm,
      (_line, key: string) => `${key}1s`,
    );
    assert.equal(rules.match(/^\s+for: 1s$/gm)?.length, 4, 'every for: shortened');
    await writeFile(path.join(scratch, 'alerts.yml'), rules);
    await writeFile(
      path.join(scratch, 'prometheus.yml'),
      stringifyYaml({
        global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
        rule_files: [path.join(scratch, 'alerts.yml')],
        scrape_configs: [
          { job_name: 'jobvisor', static_configs: [{ targets: [`127.0.0.1:${supervisor.metricsPort}`] }] },
        ],
      }),
    );

    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      prometheusBin,
      [
        `--config.file=${path.join(scratch, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(scratch, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=info',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout?.on('data', (chunk: Buffer) => prometheusLogs.push(chunk.toString('utf8')));
    prometheus.stderr?.on('data', (chunk: Buffer) => prometheusLogs.push(chunk.toString('utf8')));
    const spawned = new Promise<void>((resolve, reject) => {
      prometheus?.once('spawn', resolve);
      prometheus?.once('error', (error) =>
        reject(new Error(`cannot run ${prometheusBin} (install Debian's prometheus package)`, { cause: error })),
      );
    });
    await spawned;
    await waitFor('prometheus to be ready', 30_000, async () => {
      const response = await fetch(`${prometheusUrl}/-/ready`, { signal: AbortSignal.timeout(2_000) });
      return response.ok ? true : undefined;
    });
  });

  after(async () => {
    const prometheusPid = prometheus?.pid;
    const supervisorPid = supervisor?.child.pid;
    if (prometheus) await terminate(prometheus, 10_000);
    const supervisorExit = supervisor ? await supervisor.stop('SIGTERM', 30_000) : 0;
    await db?.drop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
    assert.equal(supervisorExit, 0, 'the supervisor drains and exits 0 on SIGTERM');
    assert.equal(isRunning(prometheusPid), false, 'prometheus is gone');
    assert.equal(isRunning(supervisorPid), false, 'the supervisor is gone');
  });

  it('loads and evaluates the four alerting rules', async () => {
    const rules = await waitFor('all rules evaluated', 30_000, async () => {
      const data = await api<{ groups: RuleGroup[] }>('/api/v1/rules?type=alert');
      const all = data.groups.flatMap((group) => group.rules);
      return all.length === 4 && all.every((rule) => rule.health === 'ok') ? all : undefined;
    });
    assert.deepEqual(rules.map((rule) => rule.name).sort(), [
      'JobvisorDeadLettersGrowing',
      'JobvisorNoSupervisorUp',
      'JobvisorOldestPendingTooOld',
      'JobvisorRetryRateHigh',
    ]);
  });

  it('scrapes the supervisor on loopback, and JobvisorNoSupervisorUp stays inactive once it is up', async () => {
    const target = await waitFor('the supervisor target to be up', 60_000, async () => {
      const data = await api<{ activeTargets: Target[] }>('/api/v1/targets?state=active');
      return data.activeTargets.find((candidate) => candidate.labels.job === 'jobvisor' && candidate.health === 'up');
    });
    assert.equal(target.scrapeUrl, `http://127.0.0.1:${supervisor?.metricsPort}/metrics`);
    assert.equal(target.lastError, '');
    const [info] = await waitFor('jobvisor_supervisor_info in the TSDB', 30_000, async () => {
      const result = await query('jobvisor_supervisor_info{job="jobvisor"}');
      return result.length > 0 ? result : undefined;
    });
    assert.equal(info?.value[1], '1');
    await waitFor('JobvisorNoSupervisorUp to be inactive', 30_000, async () =>
      (await alerts('JobvisorNoSupervisorUp')).length === 0 ? true : undefined,
    );
  });

  it('dead letters make JobvisorDeadLettersGrowing pending, then firing', async () => {
    assert.ok(db);
    assert.deepEqual(await alerts('JobvisorDeadLettersGrowing'), [], 'quiet before any dead letter');
    const failedCount = async (): Promise<number | undefined> => {
      const [sample] = await query(`max(jobvisor_jobs{job="jobvisor", kind="${KIND}", status="failed"})`);
      return sample ? Number(sample.value[1]) : undefined;
    };

    // Two waves, so Prometheus sees the failed count rise between its own samples.
    // Jobs that succeed run alongside, so the dashboard's throughput has data too.
    await enqueueMany(db.pool, [
      ...Array.from({ length: 3 }, (_, i) => ({ kind: KIND, payload: { wave: 1, i }, maxAttempts: 1 })),
      ...Array.from({ length: 3 }, (_, i) => ({ kind: OK_KIND, payload: { i } })),
    ]);
    await waitFor('3 dead letters scraped', 60_000, async () => (((await failedCount()) ?? 0) >= 3 ? true : undefined));
    await enqueueMany(
      db.pool,
      Array.from({ length: 3 }, (_, i) => ({ kind: KIND, payload: { wave: 2, i }, maxAttempts: 1 })),
    );
    await waitFor('6 dead letters scraped', 60_000, async () => (((await failedCount()) ?? 0) >= 6 ? true : undefined));

    const active = await waitFor('JobvisorDeadLettersGrowing pending or firing', 30_000, async () => {
      const [alert] = await alerts('JobvisorDeadLettersGrowing');
      return alert && ['pending', 'firing'].includes(alert.state) ? alert : undefined;
    });
    assert.equal(active.labels.kind, KIND);
    assert.equal(active.labels.queue, 'default');
    assert.equal(active.labels.severity, 'warning');

    const firing = await waitFor('JobvisorDeadLettersGrowing firing', 30_000, async () => {
      const [alert] = await alerts('JobvisorDeadLettersGrowing');
      return alert?.state === 'firing' ? alert : undefined;
    });
    assert.match(firing.annotations.summary ?? '', new RegExp(`queue default, kind ${KIND}`));
    assert.match(firing.annotations.description ?? '', new RegExp(`^\\d+ job\\(s\\) of kind ${KIND}`));

    const { rows } = await db.pool.query<{ last_error: string }>(
      "SELECT last_error FROM jobvisor.jobs WHERE kind = $1 AND status = 'failed'",
      [KIND],
    );
    assert.ok(
      rows.length >= 6 && rows.every((row) => /this task always fails/.test(row.last_error)),
      JSON.stringify(rows),
    );

    const [deadLettered] = await query(`sum(jobvisor_jobs_dead_lettered_total{job="jobvisor", kind="${KIND}"})`);
    assert.ok(Number(deadLettered?.value[1]) >= 6, 'the dead-letter counter agrees with the gauge');
    assert.deepEqual(await alerts('JobvisorNoSupervisorUp'), []);
  });

  it('runs every dashboard query without error on the live server', async (t) => {
    const dashboard = JSON.parse(await readFile(path.join(grafanaDir, 'dashboard.json'), 'utf8')) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
    assert.ok(exprs.length >= 20);
    const withData: string[] = [];
    for (const expr of exprs) {
      const live = expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', 'jobvisor').replaceAll('$queue', '.*');
      if ((await query(live)).length > 0) withData.push(expr);
    }
    t.diagnostic(`${withData.length} of ${exprs.length} dashboard queries returned data`);
    // What this run produced must show: supervisors, throughput, dead letters, latency, capacity.
    for (const wanted of [
      'up{',
      'jobvisor_jobs_completed_total',
      'jobvisor_jobs_dead_lettered_total',
      'status="failed"',
      'jobvisor_job_wait_seconds_bucket',
      'jobvisor_job_run_seconds_bucket',
      'jobvisor_pool_threads_busy',
      'jobvisor_jobs_in_flight',
      'nodejs_eventloop_lag_p99_seconds',
      'process_resident_memory_bytes',
    ]) {
      assert.ok(
        withData.some((expr) => expr.includes(wanted)),
        `no dashboard query on ${wanted} returned data`,
      );
    }
  });
});
