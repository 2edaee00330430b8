/**
 * Where a burst's PostgreSQL work goes on a deep history, against an empty twin:
 * alternating bursts of no-op jobs (tuned configuration, done rows kept) on a
 * database holding `--depth` done rows and on one holding none, each through
 * its own warmed in-process supervisor. Per side: jobs/s, the server's CPU and
 * WAL per job, and per statement (pg_stat_statements) the execution time and
 * the shared buffers it touched per job; per burst, the heap pages its rows
 * landed on and whether an autovacuum ran meanwhile.
 *
 *   DATABASE_URL=postgres://… npx tsx bench/burst_profile.ts [--depth 20000000] [--bursts 8] [--jobs 20000] [--keep]
 *   DATABASE_URL=postgres://… npx tsx bench/burst_profile.ts --databases <deep>,<twin>
 *
 * The server must load pg_stat_statements (shared_preload_libraries). Both
 * databases are filled as the history scenario fills them (addHistory, then a
 * backlog of 200,000 pending jobs of another queue and VACUUM ANALYZE) and
 * dropped afterwards, unless --keep; --databases reuses two kept ones.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { BURST_CONFIGS } from '../src/bench/burst.ts';
import { createBenchDatabase, type BenchDatabase } from '../src/bench/database.ts';
import { configuredSupervisor, jobCounter } from '../src/bench/harness.ts';
import { addHistory } from '../src/bench/history.ts';
import { startPgCost, type PerJobCost } from '../src/bench/pg_cost.ts';

const { values: args } = parseArgs({
  options: {
    depth: { type: 'string', default: '20000000' },
    bursts: { type: 'string', default: '8' },
    jobs: { type: 'string', default: '20000' },
    databases: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const server = process.env.DATABASE_URL;
if (!server) {
  process.stderr.write('set DATABASE_URL to a PostgreSQL server (two databases are created there)\n');
  process.exit(2);
}
const DEPTH = Number(args.depth);
const BURSTS = Number(args.bursts);
const JOBS = Number(args.jobs);
const KEEP = { interval: '1h', retention: '3650d', failedRetention: '3650d' };
const say = (line: string) => process.stderr.write(`[burst profile] ${line}\n`);

interface Statement {
  text: string;
  calls: number;
  execMs: number;
  hit: number;
  read: number;
  dirtied: number;
  wal: number;
}

async function statements(pool: pg.Pool): Promise<Map<string, Statement>> {
  try {
    const { rows } = await pool.query<Statement & { id: string }>(
      `SELECT queryid::text AS id, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS text, calls::float8 AS calls,
              total_exec_time AS "execMs", shared_blks_hit::float8 AS hit, shared_blks_read::float8 AS read,
              shared_blks_dirtied::float8 AS dirtied, wal_bytes::float8 AS wal
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    return new Map(rows.map(({ id, ...s }) => [id, s]));
  } catch (err) {
    throw new Error('pg_stat_statements is not loaded: add it to shared_preload_libraries and restart the server', {
      cause: err,
    });
  }
}

async function autovacuums(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT autovacuum_count + autoanalyze_count AS n FROM pg_stat_user_tables WHERE relid = 'jobvisor.jobs'::regclass`,
  );
  return Number(rows[0]?.n ?? 0);
}

async function fill(label: string, rows: number): Promise<BenchDatabase> {
  const db = await createBenchDatabase(server as string, label);
  const t0 = performance.now();
  await addHistory(db, rows);
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (queue, kind, payload) SELECT 'bench', 'noop', jsonb_build_object('i', g) FROM generate_series(1, 200000) AS g`,
  );
  await db.pool.query('VACUUM ANALYZE jobvisor.jobs');
  say(`${db.name}: ${rows} done rows in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return db;
}

function reuse(name: string): BenchDatabase {
  const u = new URL(server as string);
  u.pathname = `/${name}`;
  const url = u.toString();
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  return { name, url, pool, drop: () => pool.end() };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

async function main(): Promise<void> {
  const named = args.databases?.split(',');
  const dbs = named ? named.map(reuse) : [await fill('profile_deep', DEPTH), await fill('profile_twin', 0)];
  const sides = dbs.map((db) => {
    const supervisor = configuredSupervisor(db.url, { ...BURST_CONFIGS.tuned, cleanup: KEEP });
    return {
      db,
      supervisor,
      done: jobCounter(supervisor, 'job:completed'),
      rates: [] as number[],
      costs: [] as PerJobCost[],
      totals: new Map<string, Statement>(),
    };
  });
  try {
    for (const { db, supervisor, done } of sides) {
      await db.pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await supervisor.start();
      await db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, 2000)`,
      );
      await done.reached(2000);
    }
    await sides[0]?.db.pool.query('CHECKPOINT');
    for (let r = 0; r < BURSTS; r++)
      for (const side of sides) {
        const { db, done } = side;
        const { rows: last } = await db.pool.query<{ id: string }>('SELECT max(id) AS id FROM jobvisor.jobs');
        const before = [await statements(db.pool), await autovacuums(db.pool)] as const;
        const cost = await startPgCost(db.pool);
        const target = done.count + JOBS;
        await db.pool.query(
          `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, $1::int)`,
          [JOBS],
        );
        const t0 = performance.now();
        await done.reached(target);
        side.rates.push(JOBS / ((performance.now() - t0) / 1000));
        side.costs.push(await cost.stop(JOBS));
        const [after, vacuumsAfter] = [await statements(db.pool), await autovacuums(db.pool)];
        for (const [id, s] of after) {
          const b = before[0].get(id);
          const t = side.totals.get(id) ?? { text: s.text, calls: 0, execMs: 0, hit: 0, read: 0, dirtied: 0, wal: 0 };
          for (const k of ['calls', 'execMs', 'hit', 'read', 'dirtied', 'wal'] as const) t[k] += s[k] - (b?.[k] ?? 0);
          side.totals.set(id, t);
        }
        const { rows: pages } = await db.pool.query<{ n: string; lo: string; hi: string; rel: string }>(
          `SELECT count(DISTINCT (ctid::text::point)[0]) AS n, min((ctid::text::point)[0]) AS lo,
                  max((ctid::text::point)[0]) AS hi, pg_relation_size('jobvisor.jobs') / 8192 AS rel
             FROM jobvisor.jobs WHERE id > $1`,
          [last[0]?.id ?? 0],
        );
        const p = pages[0];
        say(
          `${db.name}: ${Math.round(side.rates.at(-1) ?? 0)} jobs/s, server CPU ${((side.costs.at(-1)?.serverCpuMsPerJob ?? 0) * 1000).toFixed(1)} µs/job, ` +
            `rows on ${p?.n} pages ${p?.lo}..${p?.hi} of ${p?.rel}, autovacuums ${vacuumsAfter - before[1]}`,
        );
      }
  } finally {
    await Promise.all(sides.map(({ supervisor }) => supervisor.stop()));
  }
  const total = BURSTS * JOBS;
  for (const { db, rates, costs, totals } of sides) {
    const cpu = median(costs.map((c) => (c.serverCpuMsPerJob ?? Number.NaN) * 1000));
    const dbCpu = median(costs.map((c) => (c.dbCpuMsPerJob ?? Number.NaN) * 1000));
    const wal = median(costs.map((c) => c.walBytesPerJob));
    console.log(
      `\n${db.name}: ${Math.round(median(rates))} jobs/s (median of ${BURSTS}), CPU per job: server ${cpu.toFixed(1)} µs, ` +
        `this database's backends ${dbCpu.toFixed(1)} µs; WAL ${wal} bytes per job`,
    );
    console.log('  µs/job exec | buffers hit/job | read/job | dirtied/job | WAL/job | calls | statement');
    for (const s of [...totals.values()].sort((a, b) => b.execMs - a.execMs).slice(0, 6))
      console.log(
        `  ${((s.execMs * 1000) / total).toFixed(2)} | ${(s.hit / total).toFixed(2)} | ${(s.read / total).toFixed(3)} | ` +
          `${(s.dirtied / total).toFixed(3)} | ${(s.wal / total).toFixed(0)} | ${s.calls} | ${s.text}`,
      );
  }
  for (const { db } of sides) {
    if (named || args.keep) await db.pool.end();
    else await db.drop();
  }
  if (args.keep && !named) say(`kept: --databases ${dbs.map((d) => d.name).join(',')}`);
}

await main();
