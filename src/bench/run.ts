/**
 * `jobvisor bench`: runs the scenarios on fresh throw-away databases on the
 * configured server (the embedded one by default), each several times, and
 * prints medians and spread; with --peers, the same scenarios for the peer
 * queues in the same run, with ratios. Speed is reported, never asserted.
 *
 *   jobvisor bench [--scenario enqueue,process,processes,pickup,deep,sustained]
 *                  [--jobs 20000] [--concurrency 50] [--processes 3] [--runs 3]
 *                  [--threads 1] [--jobs-per-thread 50] [--prefetch 2000] [--samples 200]
 *                  [--deep-pending 1000000] [--deep-done 5000000] [--duration 10m]
 *                  [--peers all|none|graphile-fast,...] [--json]
 */
import { cpus, totalmem } from 'node:os';
import { parseDuration } from '../duration.ts';
import { InputError } from '../errors.ts';
import { integer, parse } from '../cli/args.ts';
import { openContext } from '../cli/context.ts';
import { createBenchDatabase, type BenchDatabase } from './database.ts';
import { deepVersusShallow } from './deep.ts';
import { enqueueJobvisor, enqueueUnnest } from './enqueue.ts';
import type { QueueShape } from './harness.ts';
import { PEER_SYSTEMS, peersInstalled, runPeer } from './peers.ts';
import { pickup } from './pickup.ts';
import { processInProcess, processMulti } from './process.ts';
import { median, spread } from './stats.ts';
import { sustained } from './sustained.ts';

const SCENARIOS = ['enqueue', 'process', 'processes', 'pickup', 'deep', 'sustained'] as const;

interface Row {
  scenario: string;
  system: string;
  jobs?: number;
  runs: number;
  median: number;
  spread: number;
  unit: string;
  values: number[];
  extra?: Record<string, unknown>;
}

export async function runBench(argv: string[]): Promise<number> {
  const { values } = parse(
    argv,
    {
      scenario: { type: 'string' },
      jobs: { type: 'string' },
      concurrency: { type: 'string' },
      processes: { type: 'string' },
      runs: { type: 'string' },
      threads: { type: 'string' },
      'jobs-per-thread': { type: 'string' },
      prefetch: { type: 'string' },
      samples: { type: 'string' },
      'deep-pending': { type: 'string' },
      'deep-done': { type: 'string' },
      duration: { type: 'string' },
      peers: { type: 'string' },
      json: { type: 'boolean' },
    },
    'bench',
  );
  const scenarios = ((values.scenario as string | undefined) ?? 'enqueue,process,processes,pickup').split(',');
  for (const s of scenarios)
    if (!(SCENARIOS as readonly string[]).includes(s))
      throw new InputError(`bench: unknown scenario ${JSON.stringify(s)} (use ${SCENARIOS.join(', ')})`);
  const jobs = integer('--jobs', values.jobs as string | undefined, 1, 10_000_000) ?? 20_000;
  const concurrency = integer('--concurrency', values.concurrency as string | undefined, 1, 10_000) ?? 50;
  const processes = integer('--processes', values.processes as string | undefined, 1, 64) ?? 3;
  const runs = integer('--runs', values.runs as string | undefined, 1, 100) ?? 3;
  const samples = integer('--samples', values.samples as string | undefined, 1, 100_000) ?? 200;
  const shape: QueueShape = {
    concurrency,
    threads: integer('--threads', values.threads as string | undefined, 1, 256) ?? 1,
    jobsPerThread:
      integer('--jobs-per-thread', values['jobs-per-thread'] as string | undefined, 1, 10_000) ?? concurrency,
    // 2,000: the local buffer of Graphile Worker's fastest configuration (localQueue size 2000).
    prefetch: integer('--prefetch', values.prefetch as string | undefined, 0, 100_000) ?? 2000,
  };
  const deepPending =
    integer('--deep-pending', values['deep-pending'] as string | undefined, 1000, 100_000_000) ?? 1_000_000;
  const deepDone = integer('--deep-done', values['deep-done'] as string | undefined, 0, 100_000_000) ?? 5_000_000;
  let durationMs = 600_000;
  if (values.duration !== undefined) {
    try {
      durationMs = parseDuration(values.duration as string);
    } catch (err) {
      throw new InputError(`bench: --duration ${(err as Error).message}`);
    }
  }
  const peerArg = (values.peers as string | undefined) ?? 'none';
  const peers = peerArg === 'none' ? [] : peerArg === 'all' ? [...PEER_SYSTEMS] : peerArg.split(',');
  for (const p of peers)
    if (!(PEER_SYSTEMS as readonly string[]).includes(p))
      throw new InputError(`bench: unknown peer ${JSON.stringify(p)} (use ${PEER_SYSTEMS.join(', ')})`);
  if (peers.length > 0 && !peersInstalled())
    throw new InputError('bench: peers are not installed: run bench/peers/install.sh first');

  const ctx = await openContext({ logTo: 2, logLevel: 'warn' });
  const serverUrl = new URL(ctx.databaseUrl);
  serverUrl.pathname = '/postgres';
  const server = serverUrl.toString();
  const rows: Row[] = [];
  const json = values.json === true;
  const postgres =
    (await ctx.pool.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v ?? '?';
  const machine = {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? '?',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    postgres,
  };
  const emit = (row: Row) => {
    rows.push(row);
    if (json) process.stdout.write(`${JSON.stringify(row)}\n`);
    else
      process.stderr.write(
        `  ${row.scenario} ${row.system}: ${row.median.toFixed(row.unit === 'ms' ? 2 : 0)} ${row.unit} (runs ${row.values.map((v) => v.toFixed(row.unit === 'ms' ? 2 : 0)).join(', ')})\n`,
      );
  };
  const fresh = async <T>(label: string, fn: (db: BenchDatabase) => Promise<T>, migrate = true): Promise<T> => {
    const db = await createBenchDatabase(server, label, { migrate });
    try {
      return await fn(db);
    } finally {
      await db.drop();
    }
  };
  const repeat = async (n: number, fn: () => Promise<number>) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(await fn());
    return out;
  };
  // A peer that fails (for instance "too many clients" with --processes on a
  // server with max_connections 100) is reported on stderr and skipped; the rest
  // of the run goes on.
  const peerRun = async (p: string, scenario: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      process.stderr.write(
        `jobvisor bench: ${p} ${scenario} failed, skipped: ${(err as Error).message.replace(/\s+/g, ' ').trim()}\n`,
      );
    }
  };
  const row = (
    scenario: string,
    system: string,
    unit: string,
    vals: number[],
    extra?: Record<string, unknown>,
  ): Row => ({
    scenario,
    system,
    jobs,
    runs: vals.length,
    median: median(vals),
    spread: spread(vals),
    unit,
    values: vals,
    extra: { ...extra, machine },
  });

  try {
    if (!json)
      process.stderr.write(
        `jobvisor bench: ${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB, Node ${machine.node}, PostgreSQL ${postgres}; ${runs} run(s) per scenario\n`,
      );
    for (const scenario of scenarios) {
      if (scenario === 'enqueue') {
        emit(
          row(
            'enqueue',
            'jobvisor',
            'jobs/s',
            await repeat(runs, () => fresh('enqueue', async (db) => jobs / (await enqueueJobvisor(db, jobs)))),
          ),
        );
        emit(
          row(
            'enqueue',
            'unnest-insert',
            'jobs/s',
            await repeat(runs, () => fresh('unnest', async (db) => jobs / (await enqueueUnnest(db, jobs)))),
          ),
        );
        for (const p of peers)
          await peerRun(p, 'enqueue', async () =>
            emit(
              row(
                'enqueue',
                p,
                'jobs/s',
                await repeat(runs, () =>
                  fresh(
                    `peer_${p}`,
                    async (db) =>
                      (await runPeer(p, 'enqueue', { databaseUrl: db.url, jobs, concurrency })).jobsPerSec ??
                      Number.NaN,
                    false,
                  ),
                ),
              ),
            ),
          );
      } else if (scenario === 'process') {
        emit(
          row(
            'process',
            'jobvisor',
            'jobs/s',
            await repeat(runs, () =>
              fresh('process', async (db) => (await processInProcess(db, jobs, shape)).jobsPerSec),
            ),
            { shape },
          ),
        );
        for (const p of peers)
          await peerRun(p, 'process', async () =>
            emit(
              row(
                'process',
                p,
                'jobs/s',
                await repeat(runs, () =>
                  fresh(
                    `peer_${p}`,
                    async (db) =>
                      (await runPeer(p, 'process', { databaseUrl: db.url, jobs, concurrency })).jobsPerSec ??
                      Number.NaN,
                    false,
                  ),
                ),
              ),
            ),
          );
      } else if (scenario === 'processes') {
        emit(
          row(
            `process x${processes}`,
            'jobvisor',
            'jobs/s',
            await repeat(runs, () =>
              fresh('processes', async (db) => (await processMulti(db, jobs, processes, shape)).jobsPerSec),
            ),
            { shape, processes },
          ),
        );
        for (const p of peers.filter((x) => x.startsWith('graphile'))) {
          await peerRun(p, `process x${processes}`, async () =>
            emit(
              row(
                `process x${processes}`,
                p,
                'jobs/s',
                await repeat(runs, () =>
                  fresh(
                    `peer_${p}`,
                    async (db) =>
                      (await runPeer(p, 'process', { databaseUrl: db.url, jobs, concurrency, processes })).jobsPerSec ??
                      Number.NaN,
                    false,
                  ),
                ),
              ),
            ),
          );
        }
      } else if (scenario === 'pickup') {
        const results = await repeat(runs, () =>
          fresh('pickup', async (db) => {
            const r = await pickup(db, samples, shape);
            p99s.push(r.p99Ms);
            return r.p50Ms;
          }),
        );
        emit(row('pickup p50', 'jobvisor', 'ms', results));
        emit(row('pickup p99', 'jobvisor', 'ms', p99s.splice(0)));
        for (const p of peers) {
          await peerRun(p, 'pickup', async () => {
            const peerP99: number[] = [];
            const p50 = await repeat(runs, () =>
              fresh(
                `peer_${p}`,
                async (db) => {
                  const r = await runPeer(p, 'pickup', { databaseUrl: db.url, jobs: samples, concurrency });
                  peerP99.push(r.p99Ms ?? Number.NaN);
                  return r.p50Ms ?? Number.NaN;
                },
                false,
              ),
            );
            emit(row('pickup p50', p, 'ms', p50));
            emit(row('pickup p99', p, 'ms', peerP99));
          });
        }
      } else if (scenario === 'deep') {
        const r = await fresh('deep', (deep) =>
          fresh('shallow', (shallow) =>
            deepVersusShallow(deep, shallow, { pending: deepPending, done: deepDone, jobs, shape }),
          ),
        );
        emit(
          row('claim+complete of 50', 'jobvisor deep', 'ms', [r.deepClaimMs], { pending: deepPending, done: deepDone }),
        );
        emit(row('claim+complete of 50', 'jobvisor shallow', 'ms', [r.shallowClaimMs]));
        emit(row('process (deep table)', 'jobvisor', 'jobs/s', [r.deepJobsPerSec]));
        emit(row('process (shallow table)', 'jobvisor', 'jobs/s', [r.shallowJobsPerSec]));
      } else if (scenario === 'sustained') {
        const r = await fresh('sustained', (db) => sustained(db, durationMs, shape));
        emit(
          row('sustained', 'jobvisor', 'jobs/s', r.windows, {
            lossPercent: r.lossPercent,
            lossOfMediansPercent: r.lossOfMediansPercent,
            rssStartMb: r.rssStartMb,
            rssEndMb: r.rssEndMb,
            rssMb: r.rssMb,
            table: r.table,
            completed: r.completed,
            durationMs,
          }),
        );
      }
    }
  } finally {
    await ctx.close();
  }
  if (!json) printTable(rows);
  return 0;
}

const p99s: number[] = [];

function printTable(rows: Row[]) {
  const base = new Map<string, Row>();
  for (const r of rows) if (r.system === 'jobvisor' || r.system === 'jobvisor deep') base.set(r.scenario, r);
  const lines = [['scenario', 'system', 'median', 'unit', 'spread', 'jobvisor ratio']];
  for (const r of rows) {
    const b = base.get(r.scenario);
    const higherIsBetter = r.unit === 'jobs/s';
    const ratio = b && b !== r ? (higherIsBetter ? b.median / r.median : r.median / b.median) : undefined;
    lines.push([
      r.scenario,
      r.system,
      r.median.toFixed(r.unit === 'ms' ? 2 : 0),
      r.unit,
      `${(r.spread * 100).toFixed(0)} %`,
      ratio === undefined ? '' : `${ratio.toFixed(2)}x`,
    ]);
  }
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  process.stdout.write(
    lines
      .map((l) =>
        l
          .map((c, i) => c.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n',
  );
  process.stdout.write(
    'ratio: how many times better jobvisor is than that system (throughput ÷, latency ÷ inverted)\n',
  );
}
