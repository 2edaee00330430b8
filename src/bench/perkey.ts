/**
 * Scenario "perkey": flow control against the peers, one job at a time per
 * key. N no-op jobs spread round-robin over K keys (job i has key k<i mod K>),
 * jobvisor's queue with `perKeyConcurrency` 1 (and otherwise the `limits`
 * scenario's shape: concurrency 50, one thread, no prefetch) beside Graphile
 * Worker with a named queue per key and pg-boss with a group per key and
 * `groupConcurrency` 1 (bench/peers/scenarios/perkey.mjs). Every system is
 * measured like "burst", warm against warm: WARM_UP keyed jobs first, then
 * the N keyed jobs in one statement; the clock runs from that statement's
 * return until the database says all are done, polled every 2 ms once the
 * task starts reached the total. The guarantee is checked in every system:
 * a task marks its key in flight across one yield to the event loop, and a
 * key seen twice in flight fails the run (tasks/bench_perkey.ts). The
 * rounds are interleaved; a last row gives jobvisor ÷ the faster peer per
 * round (the target of issue 48 is ≥ 1.5).
 *
 * Beside the peers, each of jobvisor's rounds runs in a process of its own,
 * as each peer's round does (own_process.ts says why); alone, in this one.
 */
import { BroadcastChannel } from 'node:worker_threads';
import type { BenchDatabase } from './database.ts';
import { configuredSupervisor, jobCounter } from './harness.ts';
import { LIMITS_VARIANTS } from './limits.ts';
import { processOfRounds, roundOnItsOwn } from './own_process.ts';
import { runPeer } from './peers.ts';
import { waitAllDone, WARM_UP } from './process.ts';
import { makeRow, type RoundRobin, type Row } from './report.ts';

/** The peers with a per-key limit of one (bench/peers/lib/args.mjs PERKEY_SYSTEMS); the others have none. */
export const PERKEY_PEERS: readonly string[] = ['graphile-fast', 'graphile-default', 'pgboss'];

/** jobvisor's queue: the limits scenario's "perKeyConcurrency 1" variant. */
const QUEUE = LIMITS_VARIANTS['perKeyConcurrency 1, 1,000 keys']?.queue ?? {};

export interface PerKeyResult {
  jobsPerSec: number;
  /** Distinct keys whose jobs ran, and the most jobs of one key seen in flight at once (must be 1). */
  verified: { keys: number; mostInFlightPerKey: number };
}

/** Inserts n keyed jobs of the bench_perkey task in one statement. */
async function insertKeyed(db: BenchDatabase, n: number, keys: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO jobvisor.jobs (kind, payload, concurrency_key)
     SELECT 'bench_perkey', jsonb_build_object('k', 'k' || (i % $2::int)), 'k' || (i % $2::int)
       FROM generate_series(0, $1::int - 1) AS i`,
    [n, keys],
  );
}

/** One run of jobvisor's side: a warm supervisor, then `jobs` over `keys` keys in one statement. */
export async function perKeyBurst(db: BenchDatabase, jobs: number, keys: number): Promise<PerKeyResult> {
  const channel = new BroadcastChannel('jobvisor-bench-perkey');
  let most = 0;
  let reported: () => void = () => {};
  const firstReport = new Promise<void>((resolve) => (reported = resolve));
  channel.onmessage = (event: unknown) => {
    most = Math.max(most, (event as { data: { mostInFlightPerKey: number } }).data.mostInFlightPerKey);
    reported();
  };
  const supervisor = configuredSupervisor(db.url, { queues: { default: QUEUE }, pool: { maxThreads: 1 } });
  const started = jobCounter(supervisor, 'job:started');
  await supervisor.start();
  try {
    await insertKeyed(db, WARM_UP, keys);
    await waitAllDone(db, WARM_UP);
    await insertKeyed(db, jobs, keys);
    const t0 = performance.now();
    await started.reached(WARM_UP + jobs);
    const seconds = ((await waitAllDone(db, WARM_UP + jobs, 2)) - t0) / 1000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([firstReport, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
    clearTimeout(timer);
    if (most !== 1) throw new Error(`perkey: the most jobs of one key seen running at once was ${most}, not 1`);
    const { rows } = await db.pool.query<{ keys: number }>(
      "SELECT count(DISTINCT concurrency_key)::int AS keys FROM jobvisor.jobs WHERE kind = 'bench_perkey'",
    );
    return { jobsPerSec: jobs / seconds, verified: { keys: rows[0]?.keys ?? 0, mostInFlightPerKey: most } };
  } finally {
    channel.close();
    await supervisor.stop();
  }
}

export interface PerKeyBench {
  /** The server the rounds' databases are made on (a round in a process of its own makes its own). */
  serverUrl: string;
  jobs: number;
  keys: number;
  concurrency: number;
  peers: readonly string[];
  fresh<T>(label: string, fn: (db: BenchDatabase) => Promise<T>, migrate?: boolean): Promise<T>;
  roundRobin: RoundRobin;
  emit(row: Row): void;
  /** The rows emitted so far (the ratio row reads this scenario's). */
  rows: readonly Row[];
}

const JOBVISOR = 'jobvisor perKeyConcurrency 1';

/** One round of jobvisor's side in a process of its own (own_process.ts). */
async function perKeyRoundOnItsOwn(serverUrl: string, jobs: number, keys: number): Promise<PerKeyResult> {
  const args = ['--scenario', 'perkey', '--jobs', String(jobs), '--keys', String(keys)];
  const row = await roundOnItsOwn(serverUrl, args, JOBVISOR);
  const verified = (row.extra?.verified as PerKeyResult['verified'][] | undefined)?.[0];
  if (!verified) throw new Error('perkey: the round in its own process reported no check');
  return { jobsPerSec: row.median, verified };
}

/** Runs jobvisor and the peers that have a per-key limit, interleaved, then the ratio row. */
export async function runPerKeyScenario(b: PerKeyBench): Promise<void> {
  const scenario = `perkey ${b.jobs} over ${b.keys} keys`;
  const peers = b.peers.filter((p) => PERKEY_PEERS.includes(p));
  for (const p of b.peers.filter((x) => !PERKEY_PEERS.includes(x)))
    process.stderr.write(`jobvisor bench: perkey skips ${p}: it has no per-key limit (one job at a time per key)\n`);
  const extra = { jobs: b.jobs, keys: b.keys, verified: [] as unknown[] };
  await b.roundRobin(scenario, 'jobs/s', [
    {
      system: JOBVISOR,
      measure: async () => {
        const r =
          peers.length > 0
            ? await perKeyRoundOnItsOwn(b.serverUrl, b.jobs, b.keys)
            : await b.fresh('perkey', (db) => perKeyBurst(db, b.jobs, b.keys));
        extra.verified.push(r.verified);
        return r.jobsPerSec;
      },
      extra: { ...extra, queue: QUEUE, process: processOfRounds(peers.length > 0) },
    },
    ...peers.map((p) => {
      const verified: unknown[] = [];
      return {
        system: p,
        measure: () =>
          b.fresh(
            `peer_${p}`,
            async (db) => {
              const r = await runPeer(p, 'perkey', {
                databaseUrl: db.url,
                jobs: b.jobs,
                concurrency: b.concurrency,
                keys: b.keys,
              });
              verified.push(r.verified);
              return r.jobsPerSec ?? Number.NaN;
            },
            false,
          ),
        extra: { jobs: b.jobs, keys: b.keys, verified },
      };
    }),
  ]);
  const ratio = fasterPeerRatio(b.rows.filter((r) => r.scenario === scenario));
  if (ratio) b.emit(makeRow(`${scenario}: jobvisor ÷ the faster peer`, 'jobvisor', '×', ratio.values, ratio.extra));
}

/**
 * jobvisor's jobs/s divided by the faster peer's, per round when every
 * system ran every round (the rounds were interleaved, so one round's
 * systems saw the same load), else the medians' ratio.
 */
export function fasterPeerRatio(
  rows: readonly Row[],
): { values: number[]; extra: Record<string, unknown> } | undefined {
  const [jobvisor, ...peers] = rows;
  if (!jobvisor || peers.length === 0) return undefined;
  const rounds = jobvisor.values.length;
  if (peers.every((p) => p.values.length === rounds)) {
    const values = jobvisor.values.map((v, i) => v / Math.max(...peers.map((p) => p.values[i] ?? 0)));
    return { values, extra: { per: 'round', target: 1.5 } };
  }
  return {
    values: [jobvisor.median / Math.max(...peers.map((p) => p.median))],
    extra: { per: 'median', target: 1.5 },
  };
}
