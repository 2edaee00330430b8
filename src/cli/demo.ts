/**
 * `jobvisor demo` (npm run demo): the classic practice, end to end, on a real
 * PostgreSQL (embedded unless DATABASE_URL is set) in a database of its own.
 *
 * 20 users sign up; each signup enqueues a welcome_email in the same
 * transaction. The task fails at random half the time, so jobs retry with a
 * short backoff until all are done. Three signups are delivered twice (a
 * second job for the same user): the task's emails_sent record makes the
 * second send a no-op. At the end: 20/20 sent, attempts, retries, duplicates.
 *
 * Ctrl-C (SIGINT) or SIGTERM stops it cleanly (signals.ts): the attempts
 * running finish, the embedded server the demo started is stopped, and it
 * exits 130 or 143. A second signal ends it at once. Without this, Node's
 * default exit left the embedded server running in the checkout after a Ctrl-C.
 */
import type pg from 'pg';
import { loadConfig } from '../config/index.ts';
import { withClient } from '../db/borrow.ts';
import { migrate } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';
import { createLogger } from '../log.ts';
import { enqueue } from '../queue/enqueue.ts';
import { logEvents } from '../run/logging.ts';
import type { SupervisorEvents } from '../supervisor/events.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { parseFlags } from './args.ts';
import { ensureDatabase, openContext } from './context.ts';
import { exitCodeOf, Interrupted, watchSignals, type Signals } from './signals.ts';

const USERS = 20;
const DUPLICATES = 3;
const DEMO_DATABASE = 'jobvisor_demo';
const TIME_LIMIT_MS = 55_000;

/**
 * Resolves at the next job:completed or after `ms`, whichever comes first; the
 * other is removed, so seconds without a completion leave no listener behind
 * (they piled up into a MaxListenersExceededWarning on a slow demo).
 */
export function nextCompletion(events: SupervisorEvents, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      events.off('job:completed', wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    events.once('job:completed', wake);
  });
}

export async function demoCommand(argv: string[]): Promise<number> {
  parseFlags(argv, {}, 'demo');
  process.env.WELCOME_EMAIL_FAILURE_RATE ??= '0.5';
  const base = loadConfig();
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const signals = watchSignals();
  try {
    return await runDemo(base, signals, out);
  } catch (err) {
    if (!(err instanceof Interrupted)) throw err;
    out(`demo: stopped by ${err.signal}`);
    return exitCodeOf(err.signal);
  } finally {
    signals.dispose();
  }
}

async function runDemo(
  base: ReturnType<typeof loadConfig>,
  signals: Signals,
  out: (line: string) => void,
): Promise<number> {
  // A signal while the embedded server starts is acted on once it is up, so that it is stopped again.
  const ctx = await openContext({ logTo: 2, logLevel: 'warn', settings: base });
  const started = Date.now();
  let supervisor: Supervisor | undefined;
  let pool: pg.Pool | undefined;
  try {
    signals.check();
    // A fresh database each run, so the summary counts this run only.
    const serverUrl = new URL(ctx.databaseUrl);
    serverUrl.pathname = '/postgres';
    const admin = createPool(serverUrl.toString(), { max: 1 });
    await admin.query(`DROP DATABASE IF EXISTS ${DEMO_DATABASE} WITH (FORCE)`);
    await admin.end();
    const url = await ensureDatabase(serverUrl.toString(), DEMO_DATABASE);
    const settings = loadConfig({
      overrides: {
        // The demo's task is jobvisor's built-in welcome_email: enabled here, wherever the demo runs.
        tasks: { builtins: ['welcome_email'] },
        backoff: { base: '200ms', max: '2s', jitter: 0.5 },
        jobs: { maxAttempts: 25 },
        queues: { default: { concurrency: 10, jobsPerThread: 10 } },
        metrics: { port: 0 },
        schedules: [],
      },
    });
    const log = createLogger({ level: 'warn', fd: 2 });
    pool = createPool(url, { max: 5, log });
    await migrate(pool, { schema: settings.database.schema });
    signals.check();
    await pool.query('CREATE TABLE demo_users (id bigint PRIMARY KEY, email text NOT NULL)');
    out(
      `demo: database ${DEMO_DATABASE} ready; ${USERS} users sign up, each signup enqueues welcome_email in its own transaction`,
    );

    supervisor = new Supervisor({ settings, databaseUrl: url, log, pool });
    logEvents(supervisor.events, log);
    let completed = 0;
    let retried = 0;
    let dead = 0;
    supervisor.events.on('job:completed', ({ jobs }) => (completed += jobs.length));
    supervisor.events.on('job:retried', ({ jobs }) => (retried += jobs.length));
    supervisor.events.on('job:dead', ({ jobs }) => (dead += jobs.length));
    await supervisor.start();

    for (let id = 1; id <= USERS; id++) {
      signals.check();
      await withClient(pool, async (client) => {
        try {
          await client.query('BEGIN');
          await client.query('INSERT INTO demo_users (id, email) VALUES ($1, $2)', [id, `user${id}@example.com`]);
          await enqueue(client, 'welcome_email', { user_id: id }, { maxAttempts: 25 });
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        }
      });
    }
    // At-least-once in practice: the same signup delivered twice.
    for (let id = 1; id <= DUPLICATES; id++) await enqueue(pool, 'welcome_email', { user_id: id }, { maxAttempts: 25 });
    const total = USERS + DUPLICATES;
    out(
      `demo: enqueued ${total} jobs (${DUPLICATES} of them duplicates); the task fails half of its attempts at random`,
    );

    let last = '';
    while (completed + dead < total && Date.now() - started < TIME_LIMIT_MS) {
      const line = `progress: ${completed}/${total} done, ${retried} failed attempts retried, ${dead} dead`;
      if (line !== last) out(line);
      last = line;
      await Promise.race([nextCompletion(supervisor.events, 1000), signals.wait]);
      signals.check();
    }
    await supervisor.stop('demo finished');
    const jobs = (
      await pool.query<{ status: string; n: number; attempts: number }>(
        `SELECT status, count(*)::int AS n, sum(attempts)::int AS attempts FROM ${settings.database.schema}.jobs GROUP BY status`,
      )
    ).rows;
    const sent = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM public.emails_sent')).rows[0]?.n ?? 0;
    const done = jobs.find((j) => j.status === 'done')?.n ?? 0;
    const attempts = jobs.reduce((n, j) => n + j.attempts, 0);
    out('');
    out('summary');
    out(`  welcome emails sent:        ${sent}/${USERS}`);
    out(`  jobs done:                  ${done}/${total}`);
    out(`  attempts:                   ${attempts} (${retried} failures retried with backoff, ${dead} dead letters)`);
    out(`  sends skipped as duplicates: ${done - sent} (the emails_sent record made the repeat a no-op)`);
    out(`  took:                       ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const ok = sent === USERS && done === total;
    out(ok ? 'demo: ok' : 'demo: NOT all jobs finished');
    return ok ? 0 : 1;
  } catch (err) {
    if (err instanceof Interrupted) {
      const server = ctx.embedded?.startedHere ? ', then stopping the database server it started' : '';
      out(`demo: ${err.signal}: letting the running attempts finish${server}`);
      await supervisor?.stop(`demo stopped by ${err.signal}`);
    }
    throw err;
  } finally {
    await pool?.end();
    await ctx.close();
  }
}
