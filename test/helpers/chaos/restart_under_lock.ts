/**
 * The PostgreSQL restart that used to end processes: every kind of borrowed
 * client is out, waiting behind an operator's `LOCK TABLE jobvisor.jobs`,
 * when the server restarts (`-m fast`). Out at that moment:
 *   - the limited-queue claims of two supervisors (globalConcurrency and
 *     perKeyConcurrency queues);
 *   - the database gauges, read because /metrics was scraped;
 *   - a dashboard page (a `jobvisor dashboard` process) loading;
 *   - an app's `enqueueMany` of 1,000 jobs, the COPY path (a process of its
 *     own, which tries again when the call fails, as an app would).
 * pg-pool takes its error listener off a client while it is lent, so before
 * src/db/borrow.ts each of these processes died of an unhandled 'error'
 * event. Now each must survive, reconnect, and every job must end done.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { enqueueMany } from '../../../src/queue/enqueue.ts';
import { BIN, writeConfig, type SpawnedSupervisor } from '../supervisor.ts';
import { count, httpGet, statusCounts, until } from './measure.ts';
import type { ChaosPostgres } from './postgres.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Limited queues the supervisors of the restart test serve. */
export const LIMITED_QUEUES = {
  lim_global: { concurrency: 10, jobsPerThread: 10, globalConcurrency: 4 },
  lim_key: { concurrency: 10, jobsPerThread: 10, perKeyConcurrency: 1 },
};
/** How long the operator holds the table lock before the restart (the injected fault). */
export const LOCK_HOLD_MS = 3000;
export const APP_JOBS = 1000;
const LIMITED_JOBS = 400;

interface Child {
  child: ChildProcess;
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function track(child: ChildProcess): Child {
  const lines: string[] = [];
  let buffer = '';
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let i: number;
    while ((i = buffer.indexOf('\n')) >= 0) {
      lines.push(buffer.slice(0, i));
      buffer = buffer.slice(i + 1);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, lines, exited };
}

const lastLines = (lines: string[]) => lines.slice(-6).join('\n');

const alive = (c: { exitCode: number | null; signalCode: NodeJS.Signals | null }) =>
  c.exitCode === null && c.signalCode === null;

/** `jobvisor dashboard` on a free port (loopback, no token); resolves with its port. */
async function spawnDashboard(url: string): Promise<Child & { port: number }> {
  const c = track(
    spawn(process.execPath, [BIN, 'dashboard', '--port', '0'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DATABASE_URL: url, JOBVISOR_CONFIG: writeConfig({}), NODE_ENV: 'test' },
    }),
  );
  const line = await until(
    'the dashboard listens',
    () => {
      if (!alive(c.child)) throw new Error(`dashboard exited: ${c.lines.join('\n')}`);
      return c.lines.find((l) => l.includes('dashboard listening'));
    },
    (l) => l !== undefined,
    60_000,
    50,
  );
  return { ...c, port: (JSON.parse(line as string) as { port: number }).port };
}

/**
 * An app process: enqueueMany of APP_JOBS jobs (COPY), tried again until it
 * succeeds. It prints `ready` once loaded and enqueues when a line arrives on stdin.
 */
function spawnApp(url: string): Child {
  const enqueueUrl = pathToFileURL(path.join(root, 'src/queue/enqueue.ts')).href;
  const script = `
    import pg from 'pg';
    import { enqueueMany } from ${JSON.stringify(enqueueUrl)};
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2, application_name: 'restart-app' });
    pool.on('error', () => {});
    console.log('ready');
    await new Promise((resolve) => process.stdin.once('data', resolve));
    process.stdin.destroy();
    const jobs = Array.from({ length: ${APP_JOBS} }, (_, i) => ({ kind: 'chaos_run', queue: 'lim_global', payload: { app: i, ms: 1 } }));
    for (let attempt = 1; ; attempt++) {
      try {
        const ids = await enqueueMany(pool, jobs);
        console.log(JSON.stringify({ inserted: ids.length, attempt }));
        break;
      } catch (err) {
        console.log(JSON.stringify({ failed: String(err.message), attempt }));
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    await pool.end();`;
  return track(
    spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, DATABASE_URL: url },
    }),
  );
}

/** Backends waiting for a lock, by what they are. */
async function waiting(server: ChaosPostgres, database: string): Promise<Record<string, number>> {
  const { rows } = await server.query(
    `SELECT CASE WHEN query LIKE 'COPY%' THEN 'copy'
                 WHEN application_name = 'jobvisor-dashboard' THEN 'dashboard'
                 WHEN query LIKE '%jobvisor_claim_%limited%' THEN 'limitedClaim'
                 WHEN query LIKE '%jobvisor_count_active%' OR query LIKE '%jobvisor_oldest_due%' THEN 'gauges'
                 ELSE 'other' END AS what, count(*)::int AS n
       FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' GROUP BY 1`,
    [database],
  );
  return Object.fromEntries(rows.map((r: { what: string; n: number }) => [r.what, r.n]));
}

export async function restartUnderLock(options: {
  server: ChaosPostgres;
  url: string;
  pool: pg.Pool;
  supervisors: SpawnedSupervisor[];
}): Promise<Record<string, unknown>> {
  const { server, url, pool, supervisors } = options;
  const database = new URL(url).pathname.slice(1);
  const dashboard = await spawnDashboard(url);
  const operator = new pg.Client({ connectionString: url, application_name: 'operator' });
  operator.on('error', () => {});
  let app: Child | undefined;
  try {
    app = spawnApp(url);
    const loaded = app;
    await until(
      'the app loaded',
      () => loaded.lines.includes('ready'),
      (ok) => ok,
      60_000,
    );
    await operator.connect();
    // The limited jobs only now, the lock right after: their claims are still
    // going on when it is taken, however long the app took to load.
    const limited = [
      ...(await enqueueMany(
        pool,
        Array.from({ length: LIMITED_JOBS }, (_, i) => ({
          kind: 'chaos_run',
          queue: 'lim_global',
          payload: { ms: 20 + (i % 5) },
        })),
      )),
      ...(await enqueueMany(
        pool,
        Array.from({ length: LIMITED_JOBS }, (_, i) => ({
          kind: 'chaos_run',
          queue: 'lim_key',
          concurrencyKey: `k${i % 10}`,
          payload: { ms: 20 },
        })),
      )),
    ].map((r) => r.id);
    await until(
      'limited jobs running',
      () => count(pool, `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE queue LIKE 'lim_%' AND status = 'running'`),
      (n) => n > 0,
      30_000,
    );

    await operator.query('BEGIN');
    await operator.query('LOCK TABLE jobvisor.jobs');
    const lockedAt = Date.now();
    // The COPY first, then the page: it must still be waiting when the server
    // restarts (the dashboard bounds its statements at 5 s).
    app.child.stdin?.end('go\n');
    await until(
      'the COPY waiting behind the lock',
      () => waiting(server, database),
      (w) => (w.copy ?? 0) > 0,
      30_000,
    );
    const page = fetch(`http://127.0.0.1:${dashboard.port}/jobs?queue=lim_global`, {
      signal: AbortSignal.timeout(30_000),
    }).then(
      (r) => r.status,
      () => 0,
    );
    const scrapes = Promise.all(supervisors.map((s) => httpGet(s.metricsPort, '/metrics', 10_000)));
    const blocked = await until(
      'claims, gauges, a dashboard page and the COPY all waiting behind the lock',
      () => waiting(server, database),
      (w) => (w.limitedClaim ?? 0) > 0 && (w.gauges ?? 0) > 0 && (w.dashboard ?? 0) > 0 && (w.copy ?? 0) > 0,
      20_000,
      50,
    );
    // The operator's hold: the fault being injected.
    await until(
      'the lock held long enough',
      () => Date.now() - lockedAt,
      (ms) => ms >= LOCK_HOLD_MS,
      10_000,
      50,
    );
    const restartAt = Date.now();
    await server.stop('fast');
    await server.start();
    const upAt = Date.now();
    await operator.end().catch(() => {});

    const pageDuring = await page;
    await scrapes;
    const readyMs = await Promise.all(
      supervisors.map(async (s) => {
        await until(
          'readyz 200 after the restart',
          () => {
            if (!alive(s.child))
              throw new Error(`supervisor ${s.pid} died: ${lastLines(s.logs.map((l) => JSON.stringify(l)))}`);
            return httpGet(s.metricsPort, '/readyz', 2500);
          },
          (v) => v.status === 200,
          30_000,
          100,
        );
        return Date.now() - upAt;
      }),
    );
    await until(
      'a dashboard page loads again',
      () => {
        if (!alive(dashboard.child)) throw new Error(`the dashboard died: ${lastLines(dashboard.lines)}`);
        return httpGet(dashboard.port, '/jobs?queue=lim_global', 5000);
      },
      (v) => v.status === 200,
      30_000,
      100,
    );
    const dashboardMs = Date.now() - upAt;
    const running = app;
    await until(
      'the app finishes',
      () => alive(running.child),
      (a) => !a,
      60_000,
      100,
    );
    const appExit = await running.exited;
    const gaugesUp = await until(
      'the gauges read again',
      async () =>
        (await Promise.all(supervisors.map((s) => httpGet(s.metricsPort, '/metrics', 5000)))).map((m) =>
          /^jobvisor_database_gauges_up 1$/m.test(m.body),
        ),
      (up) => up.every(Boolean),
      30_000,
      250,
    );
    const appIds = (await pool.query<{ id: string }>(`SELECT id FROM jobvisor.jobs WHERE payload ? 'app'`)).rows.map(
      (r) => r.id,
    );
    const allIds = [...limited, ...appIds];
    await until(
      'every limited and app job done',
      () =>
        count(pool, `SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY($1) AND status <> 'done'`, [allIds]),
      (n) => n === 0,
      120_000,
      250,
    );
    return {
      blockedAtRestart: blocked,
      lockHeldMs: restartAt - lockedAt,
      restartMs: upAt - restartAt,
      pageDuringRestartStatus: pageDuring,
      readyz200AfterStartMs: readyMs,
      dashboardPage200AfterStartMs: dashboardMs,
      allDoneAfterStartMs: Date.now() - upAt,
      gaugesUp,
      app: { exit: appExit, lines: app.lines.slice(-4) },
      appJobs: {
        rows: appIds.length,
        distinct: await count(
          pool,
          `SELECT count(DISTINCT payload->'app')::int AS n FROM jobvisor.jobs WHERE payload ? 'app'`,
        ),
      },
      statuses: await statusCounts(pool, 'id = ANY($1)', [allIds]),
      attemptErrors: (
        await pool.query(
          `SELECT regexp_replace(left(e ->> 'error', 60), '[0-9]+', 'N', 'g') AS error, count(*)::int AS n
             FROM jobvisor.jobs, jsonb_array_elements(errors) e WHERE id = ANY($1) GROUP BY 1 ORDER BY 2 DESC`,
          [allIds],
        )
      ).rows,
      supervisorsAlive: supervisors.map((s) => alive(s.child)),
      dashboardAlive: alive(dashboard.child),
      unhandled: [
        ...supervisors.flatMap((s) => s.logs.map((l) => JSON.stringify(l))),
        ...dashboard.lines,
        ...app.lines,
      ].filter((l) => /Unhandled 'error' event/.test(l)).length,
    };
  } finally {
    await operator.end().catch(() => {});
    app?.child.kill('SIGKILL');
    dashboard.child.kill('SIGKILL');
    await dashboard.exited;
  }
}
