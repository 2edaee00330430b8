/**
 * Workflow costs, measured with one in-process supervisor running no-op tasks:
 *   - fan-out 10,000 → fan-in 1: from the last parent's done write to the
 *     fan-in's start (database timestamps: finished_at → started_at);
 *   - a chain of 1,000 jobs: each link's gap (parent done → child started),
 *     against the pickup of a plain job on the same idle supervisor;
 *   - the database cost of the done write that releases: one plain job, the
 *     last of 10,000 parents of one child, and one parent of 10,000 children.
 *
 *   DATABASE_URL=postgres://… npx tsx bench/workflow.ts [--fan 10000] [--chain 1000] [--json]
 *
 * A fresh database is created on that server and dropped afterwards.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config/index.ts';
import { migrate } from '../src/db/migrate.ts';
import { createLogger } from '../src/log.ts';
import { completeJobs } from '../src/queue/complete.ts';
import { enqueue, enqueueMany, type JobSpec } from '../src/queue/enqueue.ts';
import type { Store } from '../src/queue/sql.ts';
import { Supervisor } from '../src/supervisor/supervisor.ts';

const { values: args } = parseArgs({
  options: {
    fan: { type: 'string', default: '10000' },
    chain: { type: 'string', default: '1000' },
    json: { type: 'boolean', default: false },
  },
});
const FAN = Number(args.fan);
const CHAIN = Number(args.chain);
const say = (line: string) => process.stderr.write(`[workflow bench] ${line}\n`);
const server = process.env.DATABASE_URL;
if (!server) {
  process.stderr.write('set DATABASE_URL to a PostgreSQL server (a database is created there and dropped)\n');
  process.exit(2);
}
const TASKS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../test/fixtures/tasks');
const name = `jobvisor_bench_workflow_${process.pid}`;

const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length - 1) * p))] ?? Number.NaN;
};
const ms = (n: number) => Math.round(n * 100) / 100;

async function until(check: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server as string);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
  pool.on('error', () => {});
  const store: Store = { db: pool, schema: 'jobvisor' };
  const results: Record<string, unknown> = {};
  let supervisor: Supervisor | undefined;
  try {
    await migrate(pool);
    const doneOf = async (ids: string[]) =>
      Number(
        (
          await pool.query("SELECT count(*) FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND status = 'done'", [
            ids,
          ])
        ).rows[0].count,
      ) === ids.length;

    // The done write's own cost, without a supervisor: a plain job, the last parent of a fan-in, a parent of a fan-out.
    const doneWrite = async (id: string): Promise<number> => {
      await pool.query("UPDATE jobvisor.jobs SET status = 'running', locked_by = 'b', lease_token = 1 WHERE id = $1", [
        id,
      ]);
      const t = performance.now();
      await completeJobs(store, 'b', [id], ['1']);
      return performance.now() - t;
    };
    const plain: number[] = [];
    for (let i = 0; i < 20; i++) plain.push(await doneWrite((await enqueue(pool, 'x', {})).id));
    const { rows: fanParents } = await pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, status, finished_at, has_dependents)
       SELECT 'p', CASE WHEN n = 1 THEN 'pending' ELSE 'done' END, now(), true FROM generate_series(1, $1::int) n
       RETURNING id`,
      [FAN],
    );
    const last = fanParents[0]?.id as string;
    await enqueue(pool, 'fanin', {}, { dependsOn: fanParents.map((r) => r.id) });
    const lastOfFanIn = await doneWrite(last);
    const root = (await enqueue(pool, 'p', {})).id;
    await enqueueMany(
      pool,
      Array.from({ length: FAN }, () => ({ kind: 'c', dependsOn: [root] })),
    );
    const fanOutParent = await doneWrite(root);
    results.doneWriteMs = {
      plainP50: ms(pct(plain, 0.5)),
      lastOfFanIn: ms(lastOfFanIn),
      parentOfFanOut: ms(fanOutParent),
    };
    say(`done write: ${JSON.stringify(results.doneWriteMs)}`);
    await pool.query('DELETE FROM jobvisor.jobs; DELETE FROM jobvisor.job_dependencies');

    const settings = loadConfig({
      env: { NODE_ENV: 'test' },
      overrides: {
        tasks: { dir: TASKS },
        metrics: { port: 0, host: '127.0.0.1' },
        log: { level: 'warn' },
        queues: { default: { concurrency: 50, jobsPerThread: 50 } },
        pool: { maxThreads: 1 },
      },
    });
    supervisor = new Supervisor({ settings, databaseUrl: url.toString(), log: createLogger({ level: 'warn', fd: 2 }) });
    await supervisor.start();

    // Pickup of a plain job on the idle supervisor, one at a time.
    const pickups: number[] = [];
    for (let i = 0; i < 100; i++) {
      const id = (await enqueue(pool, 'chaos_noop', {})).id;
      await until(() => doneOf([id]));
      const { rows } = await pool.query(
        'SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms FROM jobvisor.jobs WHERE id = $1',
        [id],
      );
      pickups.push(Number(rows[0].ms));
    }
    results.plainPickupMs = { p50: ms(pct(pickups, 0.5)), p95: ms(pct(pickups, 0.95)) };

    // Fan-out → fan-in through the supervisor.
    const fan: JobSpec[] = Array.from({ length: FAN }, () => ({ kind: 'chaos_noop' }));
    fan.push({ kind: 'chaos_noop', dependsOn: fan.map((_, i) => ({ index: i })) });
    let t = performance.now();
    const fanIds = (await enqueueMany(pool, fan)).map((r) => r.id);
    const enqueueMs = performance.now() - t;
    t = performance.now();
    await until(() => doneOf(fanIds));
    const runMs = performance.now() - t;
    const { rows: gap } = await pool.query(
      `SELECT extract(epoch FROM c.started_at - (SELECT max(finished_at) FROM jobvisor.jobs WHERE id = ANY ($2::bigint[]))) * 1000 AS ms
         FROM jobvisor.jobs c WHERE c.id = $1`,
      [fanIds[FAN], fanIds.slice(0, FAN)],
    );
    results.fanIn = {
      parents: FAN,
      enqueueMs: ms(enqueueMs),
      runMs: ms(runMs),
      lastDoneToStartMs: ms(Number(gap[0].ms)),
    };
    say(`fan-in: ${JSON.stringify(results.fanIn)}`);

    // A chain.
    const chain: JobSpec[] = Array.from({ length: CHAIN }, (_, i) => ({
      kind: 'chaos_noop',
      ...(i > 0 && { dependsOn: [{ index: i - 1 }] }),
    }));
    t = performance.now();
    const chainIds = (await enqueueMany(pool, chain)).map((r) => r.id);
    await until(() => doneOf(chainIds));
    const chainMs = performance.now() - t;
    const { rows: links } = await pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM c.started_at - p.finished_at) * 1000 AS ms
         FROM jobvisor.job_dependencies d JOIN jobvisor.jobs c ON c.id = d.child_id JOIN jobvisor.jobs p ON p.id = d.parent_id
        WHERE d.child_id = ANY ($1::bigint[])`,
      [chainIds],
    );
    const gaps = links.map((r) => Number(r.ms));
    results.chain = {
      links: gaps.length,
      totalMs: ms(chainMs),
      linkP50Ms: ms(pct(gaps, 0.5)),
      linkP95Ms: ms(pct(gaps, 0.95)),
      beyondPickupP50Ms: ms(pct(gaps, 0.5) - pct(pickups, 0.5)),
    };
    say(`chain: ${JSON.stringify(results.chain)}`);
  } finally {
    await supervisor?.stop();
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
  process.stdout.write(args.json ? `${JSON.stringify(results)}\n` : `${JSON.stringify(results, null, 2)}\n`);
}

await main();
