/**
 * The dashboard over HTTP on a big table: 1,000,000 done (finished over the
 * last day), 100,000 pending and 10,000 dead rows (ten kinds, three errors),
 * served the way `jobvisor dashboard` serves it (its own pool of 4, 5 s
 * statement bound, bearer token). Each page is requested sequentially after a
 * warm-up; the first (cold: no cached chart, cold plans) request, p50 and p95
 * are reported. Speed is reported, never asserted.
 *
 *   npx tsx bench/dashboard.ts [--done 1000000] [--pending 100000] [--dead 10000] [--requests 100] [--json] [--keep]
 *
 * DATABASE_URL (or JOBVISOR_TEST_DATABASE_URL) names the server; a throw-away database is created on it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from '../src/bench/database.ts';
import { createDashboard } from '../src/dashboard/app.ts';
import { createPool } from '../src/db/pool.ts';
import { DASHBOARD_STATEMENT_TIMEOUT_MS } from '../src/dashboard/db.ts';
import { rollUpRound } from '../src/supervisor/loops/maintenance.ts';

const { values: args } = parseArgs({
  options: {
    done: { type: 'string', default: '1000000' },
    pending: { type: 'string', default: '100000' },
    dead: { type: 'string', default: '10000' },
    requests: { type: 'string', default: '100' },
    json: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
  },
});
const TOKEN = 'bench-dashboard-token-0123456789';

const PAGES = [
  ['overview', '/'],
  ['jobs, no filter', '/jobs'],
  ['jobs, status=failed&kind=', '/jobs?status=failed&kind=kind_3'],
  ['jobs, status=pending&queue=', '/jobs?status=pending&queue=default'],
  ['jobs, kind= (done history)', '/jobs?kind=report'],
  ['jobs, text in error', '/jobs?status=failed&error=timeout'],
  ['jobs, text in payload', '/jobs?q=customer-4242'],
  ['job page', '/jobs/ID'],
  ['dead letters (groups)', '/dead-letters'],
] as const;

async function fill(pool: import('pg').Pool, done: number, pending: number, dead: number): Promise<void> {
  const chunk = 250_000;
  for (let from = 0; from < done; from += chunk)
    await pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload, status, attempts, run_at, created_at, started_at, finished_at, locked_by)
       SELECT 'report', jsonb_build_object('customer', 'customer-' || (g % 100000)), 'done', 1, f, f, f, f, 'history'
         FROM (SELECT g, now() - random() * interval '1 day' AS f FROM generate_series(1, $1) g) x`,
      [Math.min(chunk, done - from)],
    );
  for (let from = 0; from < pending; from += chunk)
    await pool.query(
      `INSERT INTO jobvisor.jobs (kind, payload, run_at)
       SELECT 'welcome_email', jsonb_build_object('user_id', g), now() + (g % 2) * interval '1 hour' FROM generate_series(1, $1) g`,
      [Math.min(chunk, pending - from)],
    );
  await pool.query(
    `INSERT INTO jobvisor.jobs (kind, payload, status, attempts, max_attempts, last_error, errors, finished_at)
     SELECT 'kind_' || (g % 10), jsonb_build_object('n', g), 'failed', 3, 3, e,
            jsonb_build_array(jsonb_build_object('attempt', 3, 'at', now(), 'error', e)), now() - g * interval '1 second'
       FROM (SELECT g, (ARRAY['Error: timeout after 30s', 'Error: SMTP 421', 'TypeError: x is undefined'])[1 + g % 3]
                       || E'\\n    at task (task.js:1:1)' AS e
               FROM generate_series(1, $1) g) x`,
    [dead],
  );
  await pool.query('VACUUM ANALYZE jobvisor.jobs');
  // The per-minute rollup of the last day, as supervisors' cleanup rounds would have left it.
  await rollUpRound({ db: pool, schema: 'jobvisor' }, Number.POSITIVE_INFINITY);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

async function main(): Promise<void> {
  const server = process.env.DATABASE_URL || process.env.JOBVISOR_TEST_DATABASE_URL;
  if (!server) throw new Error('set DATABASE_URL to a PostgreSQL server');
  const [done, pending, dead, requests] = [args.done, args.pending, args.dead, args.requests].map((v) => Number(v));
  const db = await createBenchDatabase(server, 'dashboard');
  const pool = createPool(db.url, { max: 4, statementTimeoutMs: DASHBOARD_STATEMENT_TIMEOUT_MS });
  const http = createServer(createDashboard({ pool, auth: { token: TOKEN } }));
  try {
    const t0 = performance.now();
    await fill(db.pool, done ?? 0, pending ?? 0, dead ?? 0);
    const fillSeconds = (performance.now() - t0) / 1000;
    const { rows } = await db.pool.query<{ id: string }>(
      `SELECT id FROM jobvisor.jobs WHERE status = 'failed' ORDER BY id LIMIT 1`,
    );
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const results: Array<{ page: string; path: string; first: number; p50: number; p95: number; status: number }> = [];
    for (const [page, template] of PAGES) {
      const path = template.replace('ID', rows[0]?.id ?? '1');
      let status = 0;
      const get = async () => {
        const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
        await res.arrayBuffer();
        status = res.status;
      };
      const cold = performance.now();
      await get();
      const first = performance.now() - cold;
      for (let i = 0; i < 4; i++) await get();
      const times: number[] = [];
      for (let i = 0; i < (requests ?? 100); i++) {
        const s = performance.now();
        await get();
        times.push(performance.now() - s);
      }
      times.sort((a, b) => a - b);
      results.push({ page, path, first, p50: percentile(times, 50), p95: percentile(times, 95), status });
    }
    if (args.json) {
      process.stdout.write(`${JSON.stringify({ done, pending, dead, requests, fillSeconds, results }, null, 2)}\n`);
      return;
    }
    process.stdout.write(
      `rows: ${done} done, ${pending} pending, ${dead} dead (filled in ${fillSeconds.toFixed(0)} s); ${requests} sequential requests per page\n\n`,
    );
    process.stdout.write('| page | path | status | first ms | p50 ms | p95 ms |\n|---|---|---|---|---|---|\n');
    for (const r of results)
      process.stdout.write(
        `| ${r.page} | \`${r.path}\` | ${r.status} | ${r.first.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} |\n`,
      );
  } finally {
    http.close();
    await pool.end();
    if (args.keep) {
      process.stdout.write(`\nkept database ${db.name}\n`);
      await db.pool.end();
    } else await db.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
