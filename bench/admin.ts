/**
 * The admin API on a large table: p50/p95 of the dashboard's reads (overview,
 * filtered job lists and their capped counts, throughput, dead-letter groups)
 * with, by default, 1 M done, 100 k pending and 10 k dead rows.
 *
 *   npx tsx bench/admin.ts [--done 1000000] [--pending 100000] [--dead 10000] [--samples 50] [--json] [--keep]
 *
 * Database: DATABASE_URL (a server; a fresh database is created on it and
 * dropped afterwards, unless --keep). Rows are loaded with INSERT … SELECT generate_series,
 * then VACUUM ANALYZE, as autovacuum would leave a table that size, then the
 * per-minute rollup of the last day, as supervisors' cleanup rounds would have
 * left it (src/queue/finished_rollup.ts). Done rows
 * finished over the last 3 days (the default retention) in id order, as jobs
 * do (so the last hour's rows share pages, as in a real table); dead letters
 * over the last 7; pending rows are the newest ids, 90 % due. The pool has the 5 s
 * statement_timeout the dashboard uses.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPool } from '../src/db/pool.ts';
import { migrate } from '../src/db/migrate.ts';
import {
  countJobs,
  deadLetterGroups,
  listJobs,
  overview,
  queueDetail,
  throughput,
  type JobFilter,
} from '../src/queue/admin/index.ts';
import type { Store } from '../src/queue/sql.ts';
import { rollUpRound } from '../src/supervisor/loops/maintenance.ts';

const { values: args } = parseArgs({
  options: {
    done: { type: 'string', default: '1000000' },
    pending: { type: 'string', default: '100000' },
    dead: { type: 'string', default: '10000' },
    samples: { type: 'string', default: '50' },
    json: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
  },
});
const DONE = Number(args.done);
const PENDING = Number(args.pending);
const DEAD = Number(args.dead);
const SAMPLES = Math.max(1, Number(args.samples));
const say = (line: string) => process.stderr.write(`[admin bench] ${line}\n`);

const server = process.env.DATABASE_URL;
if (!server) {
  process.stderr.write('set DATABASE_URL to a PostgreSQL server (a database is created there and dropped)\n');
  process.exit(2);
}

const KINDS = `(ARRAY['welcome_email','thumbnail','daily_report','sync','notify'])[1 + i % 5]`;
const QUEUES = `(ARRAY['default','cpu','mail'])[1 + i % 3]`;

async function load(pool: pg.Pool): Promise<void> {
  const t = performance.now();
  await pool.query(
    `INSERT INTO jobvisor.jobs (kind, queue, payload, status, attempts, run_at, created_at, started_at, finished_at, locked_by)
     SELECT ${KINDS}, ${QUEUES}, jsonb_build_object('user_id', i, 'ref', 'user-' || i), 'done', 1, f - interval '2 s',
            f - interval '2 s', f - interval '1 s', f, 'bench:1:abc'
       FROM (SELECT i, now() - (1 - i::float8 / $1::int) * interval '3 days' - random() * interval '1 minute' AS f
               FROM generate_series(1, $1::int) AS i) AS s`,
    [DONE],
  );
  await pool.query(
    `INSERT INTO jobvisor.jobs (kind, queue, payload, status, attempts, max_attempts, run_at, created_at, started_at,
                                finished_at, locked_by, last_error, errors)
     SELECT ${KINDS}, ${QUEUES}, jsonb_build_object('user_id', i), 'failed', 8, 8, f, f - interval '1 hour', f, f,
            'bench:1:abc', e, jsonb_build_array(jsonb_build_object('attempt', 8, 'at', f, 'error', e))
       FROM (SELECT i, now() - (1 - i::float8 / $1::int) * interval '7 days' AS f,
                    'Error: upstream ' || (i % 20) || ' refused the request' || E'\\n    at call (task.js:' || i || ')' AS e
               FROM generate_series(1, $1::int) AS i) AS s`,
    [DEAD],
  );
  await pool.query(
    `INSERT INTO jobvisor.jobs (kind, queue, payload, run_at)
     SELECT ${KINDS}, ${QUEUES}, jsonb_build_object('user_id', i),
            CASE WHEN i % 10 = 0 THEN now() + random() * interval '1 hour' ELSE now() - random() * interval '10 minutes' END
       FROM generate_series(1, $1::int) AS i`,
    [PENDING],
  );
  say(`loaded ${DONE + DEAD + PENDING} rows in ${((performance.now() - t) / 1000).toFixed(1)} s; vacuum analyze`);
  await pool.query('VACUUM ANALYZE jobvisor.jobs');
}

interface Result {
  name: string;
  p50: number;
  p95: number;
  max: number;
  note?: string;
}

async function measure(name: string, fn: () => Promise<unknown>, samples = SAMPLES): Promise<Result> {
  for (let i = 0; i < 3; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] as number;
  return { name, p50: at(0.5), p95: at(0.95), max: times[times.length - 1] as number };
}

async function main(): Promise<void> {
  const name = `jobvisor_bench_admin_${process.pid}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  say(`database ${name}`);
  const url = new URL(server as string);
  url.pathname = `/${name}`;
  const loader = createPool(url.toString(), { max: 1, statementTimeoutMs: 0 });
  const pool = createPool(url.toString(), { max: 4, statementTimeoutMs: 5000 });
  const store: Store = { db: pool, schema: 'jobvisor' };
  try {
    await migrate(loader);
    await load(loader);
    await rollUpRound({ db: loader, schema: 'jobvisor' }, Number.POSITIVE_INFINITY);
    await loader.end();
    const lists: Array<[string, JobFilter]> = [
      ['dead letters of a kind', { status: 'failed', kind: 'thumbnail' }],
      ['pending of a queue', { status: 'pending', queue: 'mail' }],
      ['scheduled of a queue', { status: 'pending', due: false, queue: 'mail' }],
      ['done of a kind', { status: 'done', kind: 'sync' }],
      ['a dead-letter group', { status: 'failed', errorPrefix: 'Error: upstream 7 refused the request' }],
      ['error text', { errorText: 'upstream 13' }],
      ['payload text (rare)', { payloadText: '"user-123456"' }],
      // As the dashboard searches (dashboard.redact): matches outside redacted values only.
      ['payload text (rare), redacted', { payloadText: '"user-123456"', payloadRedact: ['password', 'token'] }],
      ['payload text (common), redacted', { payloadText: 'user-1', payloadRedact: ['password', 'token'] }],
    ];
    const results: Result[] = [];
    results.push(await measure('overview()', () => overview(store)));
    for (const [label, filter] of lists) {
      results.push(await measure(`listJobs: ${label}, 50 rows`, () => listJobs(store, filter, { limit: 50 })));
      results.push(await measure(`countJobs: ${label}, cap 10000`, () => countJobs(store, filter)));
    }
    const page = await listJobs(store, { status: 'pending' }, { limit: 50 });
    results.push(
      await measure('listJobs: pending, page 2 (keyset)', () =>
        listJobs(store, { status: 'pending' }, { limit: 50, after: page.next }),
      ),
    );
    const older = await listJobs(store, { status: 'pending' }, { limit: 50, after: page.next });
    results.push(
      await measure('listJobs: pending, newer page (keyset)', () =>
        listJobs(store, { status: 'pending' }, { limit: 50, before: older.prev }),
      ),
    );
    results.push(await measure("queueDetail('mail')", () => queueDetail(store, 'mail')));
    results.push(await measure("throughput('hour')", () => throughput(store, 'hour')));
    results.push(await measure("throughput('day')", () => throughput(store, 'day')));
    results.push(await measure('deadLetterGroups()', () => deadLetterGroups(store)));
    const rows = { done: DONE, pending: PENDING, dead: DEAD };
    if (args.json) process.stdout.write(`${JSON.stringify({ rows, samples: SAMPLES, results })}\n`);
    else {
      process.stdout.write(`rows: ${DONE} done, ${PENDING} pending, ${DEAD} dead; ${SAMPLES} samples each (ms)\n`);
      const width = Math.max(...results.map((r) => r.name.length));
      process.stdout.write(
        `${'query'.padEnd(width)}  ${'p50'.padStart(8)}  ${'p95'.padStart(8)}  ${'max'.padStart(8)}\n`,
      );
      for (const r of results)
        process.stdout.write(
          `${r.name.padEnd(width)}  ${r.p50.toFixed(1).padStart(8)}  ${r.p95.toFixed(1).padStart(8)}  ${r.max.toFixed(1).padStart(8)}\n`,
        );
    }
  } finally {
    await loader.end().catch(() => {});
    await pool.end();
    if (args.keep) say(`kept database ${name}`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
