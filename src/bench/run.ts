/**
 * `jobvisor bench`: runs the scenarios on fresh throw-away databases on the
 * configured server (the embedded one by default), each several times, and
 * prints medians and spread; with --peers, the same scenarios for the peer
 * queues in the same run, on the same Node.js, with ratios. The output names
 * the Node.js version (the header, the table's last line, `machine.node` of
 * each JSON row). Speed is reported, never asserted.
 * Variants of one scenario run round-robin (run 1 of each, then run 2, …) so
 * that load from anything else on the machine falls on all alike.
 *
 *   jobvisor bench [--scenario burst,cold,startup,pickup,enqueue,process,processes,deep,sustained,limits,
 *                               perkey,fanin,chain,workflows,history,steps,sleepers,signals] [--keys 1000]
 *                  [--burst-jobs 20000,100000] [--configs concurrency-only,tuned,tuned-keep-none]
 *                  [--jobs 20000] [--concurrency 50] [--processes 3] [--runs 3]
 *                  [--threads 1] [--jobs-per-thread 50] [--prefetch 2000] [--samples 200]
 *                  [--deep-pending 1000000] [--deep-done 5000000] [--duration 10m] [--retention 1m]
 *                  [--fanin-parents 10000] [--chain-length 1000] [--workflows 10000]
 *                  [--history-depths 0,5M,10M,20M] [--sleep 5s]
 *                  [--peers all|none|graphile-fast,...] [--json]
 */
import { cpus, totalmem } from 'node:os';
import { BURST_CONFIGS, burstVariants } from './burst.ts';
import { LIMITS_VARIANTS, limitsBurst, limitsRatios } from './limits.ts';
import { createBenchDatabase, type BenchDatabase } from './database.ts';
import { deepVersusShallow } from './deep.ts';
import { DURABLE_SCENARIOS, runDurableScenario, type DurableScenario } from './durable.ts';
import { ENQUEUERS } from './enqueue.ts';
import { runHistory, type AdminReads } from './history.ts';
import { benchOptions } from './options.ts';
import { ownOr, ownRoundSystem, processOfRounds, shapeArgs } from './own_process.ts';
import { runPeer } from './peers.ts';
import { runPerKeyScenario } from './perkey.ts';
import { pickupRound } from './pickup.ts';
import { processInProcess, processMulti } from './process.ts';
import { describeRow, formatTable, makeRow, type RoundRobin, type Row } from './report.ts';
import { loadAverage, openBenchServer, serverVersion } from './server.ts';
import { cold, ENTRIES, entryAvailable, startup } from './startup.ts';
import { sustained } from './sustained.ts';
import { runWorkflowScenario } from './workflow_rows.ts';
import { messageOf } from '../errors.ts';

/** `admin`: the operator's reads the history scenario times, which the bench may not import (history.ts). */
export async function runBench(argv: string[], admin: AdminReads): Promise<number> {
  const {
    scenarios,
    burstJobs,
    configs,
    jobs,
    concurrency,
    processes,
    keys,
    runs,
    samples,
    shape,
    deepPending,
    deepDone,
    workflow,
    historyDepths,
    durationMs,
    retentionMs,
    sleepMs,
    peers,
    json,
  } = benchOptions(argv);
  const server = await openBenchServer();
  const rows: Row[] = [];
  const machine = {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? '?',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    postgres: await serverVersion(server.url),
  };
  const emit = (row: Row) => {
    row.extra = { ...row.extra, machine, loadAverage: loadAverage() };
    rows.push(row);
    if (json) process.stdout.write(`${JSON.stringify(row)}\n`);
    else process.stderr.write(describeRow(row));
  };
  const fresh = async <T>(label: string, fn: (db: BenchDatabase) => Promise<T>, migrate = true): Promise<T> => {
    const db = await createBenchDatabase(server.url, label, { migrate });
    try {
      return await fn(db);
    } finally {
      await db.drop();
    }
  };
  // Beside the peers, each of jobvisor's rounds runs in a process of its own, as theirs do (own_process.ts).
  const ownUrl = peers.length > 0 ? server.url : undefined;
  const howRun = { process: processOfRounds(ownUrl !== undefined) };
  const peerRound = (p: string, scenario: string, n: number) =>
    fresh(`peer_${p}`, (db) => runPeer(p, scenario, { databaseUrl: db.url, jobs: n, concurrency }), false);
  const peer = async (p: string, scenario: string, n: number) =>
    (await peerRound(p, scenario, n)).jobsPerSec ?? Number.NaN;
  /**
   * Runs every variant `runs` times, round-robin, and emits one row per
   * variant. A variant that fails (a peer with "too many clients", say) is
   * reported on stderr and dropped; the rest go on.
   */
  const roundRobin: RoundRobin = async (scenario, unit, all) => {
    // A round in a process of its own (own_process.ts) measures its one system.
    const only = ownRoundSystem();
    const variants = only === undefined ? all : all.filter((v) => v.system === only);
    const results = new Map(variants.map((v) => [v.system, [] as number[]]));
    const failed = new Set<string>();
    for (let r = 0; r < runs; r++)
      for (const v of variants) {
        if (failed.has(v.system)) continue;
        try {
          results.get(v.system)?.push(await v.measure());
        } catch (err) {
          failed.add(v.system);
          process.stderr.write(
            `jobvisor bench: ${scenario} ${v.system} failed, skipped: ${messageOf(err).replace(/\s+/g, ' ').trim()}\n`,
          );
        }
      }
    for (const v of variants)
      if (!failed.has(v.system)) emit(makeRow(scenario, v.system, unit, results.get(v.system) ?? [], v.extra));
  };

  try {
    if (!json)
      process.stderr.write(
        `jobvisor bench: ${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB, Node ${machine.node}, PostgreSQL ${machine.postgres}; ${runs} run(s) per scenario; load average ${loadAverage()}\n`,
      );
    for (const scenario of scenarios) {
      if ((DURABLE_SCENARIOS as readonly string[]).includes(scenario)) {
        await runDurableScenario(scenario as DurableScenario, { runs, jobs, sleepMs, shape, fresh, emit });
      } else if (scenario === 'fanin' || scenario === 'chain' || scenario === 'workflows') {
        await runWorkflowScenario(scenario, { runs, shape, ...workflow, fresh, roundRobin, emit });
      } else if (scenario === 'burst') {
        for (const n of burstJobs) {
          const own = { serverUrl: server.url, ownProcess: peers.length > 0, fresh };
          const others = peers.map((p) => ({ system: p, measure: () => peer(p, 'burst', n), extra: { jobs: n } }));
          await roundRobin(`burst ${n}`, 'jobs/s', [...burstVariants(n, configs, own), ...others]);
        }
      } else if (scenario === 'limits') {
        await roundRobin(
          `limits ${jobs}`,
          'jobs/s',
          Object.entries(LIMITS_VARIANTS).map(([name, variant]) => ({
            system: `jobvisor ${name}`,
            measure: () => fresh('limits', (db) => limitsBurst(db, jobs, variant)),
            extra: { jobs, queue: variant.queue, keys: variant.keys },
          })),
        );
        for (const row of limitsRatios(
          `limits ${jobs}`,
          rows.filter((r) => r.scenario === `limits ${jobs}`),
        ))
          emit(row);
      } else if (scenario === 'perkey') {
        await runPerKeyScenario({
          serverUrl: server.url,
          jobs,
          keys,
          concurrency,
          peers,
          fresh,
          roundRobin,
          emit,
          rows,
        });
      } else if (scenario === 'cold') {
        const entry = entryAvailable('dist') ? 'dist' : 'checkout';
        await roundRobin(`cold ${jobs}`, 'jobs/s', [
          ...configs.map((c) => ({
            system: `jobvisor ${c} (${entry})`,
            measure: () =>
              fresh('cold', async (db) => (await cold(db, jobs, BURST_CONFIGS[c] ?? {}, entry)).jobsPerSec),
            extra: { jobs, config: BURST_CONFIGS[c], entry },
          })),
          ...peers.map((p) => ({ system: p, measure: () => peer(p, 'cold', jobs), extra: { jobs } })),
        ]);
      } else if (scenario === 'startup') {
        const firstJob = new Map<string, number[]>();
        await roundRobin(
          'startup: process start → /readyz 200',
          'ms',
          ENTRIES.filter(entryAvailable).map((entry) => ({
            system: `jobvisor (${entry})`,
            measure: () =>
              fresh('startup', async (db) => {
                const r = await startup(db, BURST_CONFIGS['concurrency-only'] ?? {}, entry);
                firstJob.set(entry, [...(firstJob.get(entry) ?? []), r.firstJobMs]);
                return r.readyMs;
              }),
          })),
        );
        for (const [entry, vals] of firstJob)
          emit(makeRow('startup: process start → first job done', `jobvisor (${entry})`, 'ms', vals));
      } else if (scenario === 'pickup') {
        const p99 = new Map<string, number[]>();
        const keep = (system: string, v: number) => p99.set(system, [...(p99.get(system) ?? []), v]);
        await roundRobin('pickup p50', 'ms', [
          {
            system: 'jobvisor',
            measure: async () => {
              const r = await pickupRound(fresh, samples, shape, ownUrl);
              keep('jobvisor', r.p99Ms);
              return r.p50Ms;
            },
            extra: howRun,
          },
          ...peers.map((p) => ({
            system: p,
            measure: async () => {
              const r = await peerRound(p, 'pickup', samples);
              keep(p, r.p99Ms ?? Number.NaN);
              return r.p50Ms ?? Number.NaN;
            },
          })),
        ]);
        for (const [system, vals] of p99) emit(makeRow('pickup p99', system, 'ms', vals));
      } else if (scenario === 'enqueue') {
        await roundRobin(`enqueue ${jobs}`, 'jobs/s', [
          ...(['jobvisor', 'unnest-insert'] as const).map((system) => ({
            system,
            measure: ownOr(ownUrl, system, ['--scenario', 'enqueue', '--jobs', String(jobs)], () =>
              fresh('enqueue', async (db) => jobs / (await ENQUEUERS[system](db, jobs))),
            ),
            extra: howRun,
          })),
          ...peers.map((p) => ({ system: p, measure: () => peer(p, 'enqueue', jobs) })),
        ]);
      } else if (scenario === 'process') {
        await roundRobin(`process ${jobs}`, 'jobs/s', [
          {
            system: 'jobvisor',
            measure: ownOr(
              ownUrl,
              'jobvisor',
              ['--scenario', 'process', '--jobs', String(jobs), ...shapeArgs(shape)],
              () => fresh('process', async (db) => (await processInProcess(db, jobs, shape)).jobsPerSec),
            ),
            extra: { shape, ...howRun },
          },
          ...peers.map((p) => ({ system: p, measure: () => peer(p, 'process', jobs) })),
        ]);
      } else if (scenario === 'processes') {
        await roundRobin(`process ${jobs} x${processes}`, 'jobs/s', [
          {
            system: 'jobvisor',
            measure: () =>
              fresh('processes', async (db) => (await processMulti(db, jobs, processes, shape)).jobsPerSec),
            extra: { shape, processes },
          },
          ...peers
            .filter((x) => x.startsWith('graphile'))
            .map((p) => ({
              system: p,
              measure: () =>
                fresh(
                  `peer_${p}`,
                  async (db) =>
                    (await runPeer(p, 'process', { databaseUrl: db.url, jobs, concurrency, processes })).jobsPerSec ??
                    Number.NaN,
                  false,
                ),
            })),
        ]);
      } else if (scenario === 'deep') {
        const r = await fresh('deep', (deep) =>
          fresh('shallow', (shallow) =>
            deepVersusShallow(deep, shallow, { pending: deepPending, done: deepDone, jobs, shape }),
          ),
        );
        emit(
          makeRow('claim+complete of 50', 'jobvisor deep', 'ms', [r.deepClaimMs], {
            pending: deepPending,
            done: deepDone,
          }),
        );
        emit(makeRow('claim+complete of 50', 'jobvisor shallow', 'ms', [r.shallowClaimMs]));
        emit(makeRow('process (deep table)', 'jobvisor', 'jobs/s', [r.deepJobsPerSec]));
        emit(makeRow('process (shallow table)', 'jobvisor', 'jobs/s', [r.shallowJobsPerSec]));
      } else if (scenario === 'history') {
        const say = json ? undefined : (text: string) => process.stderr.write(text);
        await fresh('history', (db) =>
          fresh('history_empty', (twin) =>
            runHistory(db, { depths: historyDepths, jobs, runs, admin, emit, say, twin }),
          ),
        );
      } else if (scenario === 'sustained') {
        const { jobsPerSec, ...r } = await fresh('sustained', (db) => sustained(db, durationMs, shape, retentionMs));
        emit(makeRow('sustained', 'jobvisor', 'jobs/s', jobsPerSec, { ...r, durationMs }));
      }
    }
  } finally {
    await server.close();
  }
  if (!json)
    process.stdout.write(
      `${formatTable(rows)}every row ran on Node.js ${machine.node}, PostgreSQL ${machine.postgres}, ${machine.cores} cores\n`,
    );
  return 0;
}
