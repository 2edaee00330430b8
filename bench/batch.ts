/**
 * Batch tasks against one job per call, in the same run and supervisor: N jobs
 * each write one row, through
 *   - `row_one`: one task call per job, one INSERT each;
 *   - `row_batch`: a batch task (maxSize, maxWait 50 ms), one
 *     `INSERT … SELECT unnest` per call.
 * Each phase enqueues its N jobs in one transaction and times from that commit
 * to the last job written done (jobs.finished_at); the phases alternate
 * (one, batch, one, batch) and the best of each is reported, so a neighbour's
 * CPU burst costs both alike.
 *
 *   DATABASE_URL=postgres://… npx tsx bench/batch.ts [--jobs 10000] [--size 100] [--rounds 2] [--json]
 *
 * A fresh database is created on that server and dropped afterwards.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config/index.ts';
import { migrate } from '../src/db/migrate.ts';
import { createLogger } from '../src/log.ts';
import { enqueueMany } from '../src/queue/enqueue.ts';
import { Supervisor } from '../src/supervisor/supervisor.ts';

const { values: args } = parseArgs({
  options: {
    jobs: { type: 'string', default: '10000' },
    size: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '2' },
    lone: { type: 'string', default: '0' },
    concurrency: { type: 'string' },
    prefetch: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const N = Number(args.jobs);
const SIZE = Number(args.size);
const ROUNDS = Number(args.rounds);
const LONE = Number(args.lone);
/** The queue's concurrency: by default one call's worth (maxSize), so one call at a time. */
const CONCURRENCY = Number(args.concurrency ?? SIZE);
/** Jobs claimed ahead; unset: the default (2,000 here). */
const PREFETCH = args.prefetch === undefined ? {} : { prefetch: Number(args.prefetch) };
const say = (line: string) => process.stderr.write(`[batch bench] ${line}\n`);
const server = process.env.DATABASE_URL;
if (!server) {
  process.stderr.write('set DATABASE_URL to a PostgreSQL server (a database is created there and dropped)\n');
  process.exit(2);
}
const name = `jobvisor_bench_batch_${process.pid}`;

const ONE = `export default async (payload, ctx) => {
  await ctx.db.query('INSERT INTO sink (n) VALUES ($1)', [payload.n]);
};\n`;
const BATCH = `export const options = { batch: { maxSize: ${SIZE}, maxWait: '50ms' } };
export default async (jobs, ctx) => {
  await ctx.db.query('INSERT INTO sink (n) SELECT unnest($1::int[])', [jobs.map((j) => j.payload.n)]);
};\n`;
const LONE_TASK = `export const options = { batch: { maxSize: ${SIZE}, maxWait: '200ms' } };
export default async (jobs, ctx) => {
  const at = Date.now();
  await ctx.db.query('INSERT INTO lone_calls (n, at_ms) SELECT unnest($1::int[]), $2', [jobs.map((j) => j.payload.n), at]);
};\n`;

/** The value below which `share` of the sorted values lie. */
const quantile = (sorted: number[], share: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] as number;

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server as string);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
  pool.on('error', () => {});
  const tasks = mkdtempSync(path.join(tmpdir(), 'jobvisor-bench-batch-'));
  writeFileSync(path.join(tasks, 'row_one.js'), ONE);
  writeFileSync(path.join(tasks, 'row_batch.js'), BATCH);
  writeFileSync(path.join(tasks, 'row_lone.js'), LONE_TASK);
  let supervisor: Supervisor | undefined;
  const best: Record<string, number> = {};
  try {
    await migrate(pool);
    await pool.query('CREATE TABLE sink (n int); CREATE TABLE lone_calls (n int, at_ms bigint)');
    const settings = loadConfig({
      env: { NODE_ENV: 'test' },
      overrides: {
        tasks: { dir: tasks },
        metrics: { port: 0, host: '127.0.0.1' },
        log: { level: 'warn' },
        queues: { default: { concurrency: CONCURRENCY, jobsPerThread: CONCURRENCY, ...PREFETCH } },
        pool: { maxThreads: 2 },
      },
    });
    supervisor = new Supervisor({
      settings,
      databaseUrl: url.toString(),
      log: createLogger({ level: 'warn', fd: 2 }),
    });
    await supervisor.start();
    // The calls of the timed batch phases: how full they were and how long they gathered.
    const calls = { n: 0, jobs: 0, fillMs: 0, timed: false };
    supervisor.events.on('batch:called', ({ kind, size, fillMs }) => {
      if (kind !== 'row_batch' || !calls.timed) return;
      calls.n++;
      calls.jobs += size;
      calls.fillMs += fillMs;
    });
    const phase = async (kind: string, n = N): Promise<number> => {
      await pool.query('TRUNCATE sink');
      await pool.query('DELETE FROM jobvisor.jobs');
      const committed = Date.now();
      await enqueueMany(
        pool,
        Array.from({ length: n }, (_, i) => ({ kind, payload: { n: i } })),
      );
      for (;;) {
        const { rows } = await pool.query<{ done: number; last: Date | null }>(
          "SELECT count(*)::int AS done, max(finished_at) AS last FROM jobvisor.jobs WHERE status = 'done'",
        );
        if (rows[0]?.done === n) return n / (((rows[0].last as Date).getTime() - committed) / 1000);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    // Warm-up: each kind's options read and a thread booted, not timed.
    await phase('row_one', 200);
    await phase('row_batch', 200);
    calls.timed = true;
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of ['row_one', 'row_batch']) {
        const rate = await phase(kind);
        say(`round ${round + 1} ${kind}: ${Math.round(rate)} jobs/s`);
        best[kind] = Math.max(best[kind] ?? 0, rate);
      }
    }
    const one = best.row_one as number;
    const batch = best.row_batch as number;
    const result: Record<string, unknown> = {
      jobs: N,
      maxSize: SIZE,
      concurrency: CONCURRENCY,
      onePerCallJobsPerS: Math.round(one),
      batchJobsPerS: Math.round(batch),
      speedup: Math.round((batch / one) * 10) / 10,
      batchCalls: calls.n,
      meanCallSize: Math.round((calls.jobs / Math.max(1, calls.n)) * 10) / 10,
      meanFillMs: Math.round((calls.fillMs / Math.max(1, calls.n)) * 10) / 10,
    };
    if (LONE > 0) result.lone = await lone(pool);
    if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else say(JSON.stringify(result));
  } finally {
    await supervisor?.stop();
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    rmSync(tasks, { recursive: true, force: true });
  }
}

/** Commit-to-call latency of LONE lone jobs of a batch task with maxWait 200 ms. */
async function lone(pool: pg.Pool): Promise<Record<string, number>> {
  await pool.query('DELETE FROM jobvisor.jobs');
  const waited: number[] = [];
  for (let i = -1; i < LONE; i++) {
    const sent = Date.now();
    await enqueueMany(pool, [{ kind: 'row_lone', payload: { n: i } }]);
    for (;;) {
      const { rows } = await pool.query<{ at_ms: string }>('SELECT at_ms FROM lone_calls WHERE n = $1', [i]);
      if (rows[0]) {
        // The first (i = -1) reads the task's options and boots its thread: not counted.
        if (i >= 0) waited.push(Number(rows[0].at_ms) - sent);
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  const sorted = waited.sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50Ms: quantile(sorted, 0.5),
    p95Ms: quantile(sorted, 0.95),
    p99Ms: quantile(sorted, 0.99),
    maxMs: sorted.at(-1) as number,
  };
}

await main();
