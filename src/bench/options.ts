/**
 * The bench command's argument parsing, kept in the bench so that it depends
 * on no CLI module (the CLI loads the bench, never the other way round).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseDuration } from '../duration.ts';
import { InputError, messageOf } from '../errors.ts';
import { BURST_CONFIGS } from './burst.ts';
import { DURABLE_SCENARIOS } from './durable.ts';
import type { QueueShape } from './harness.ts';
import { PEER_SYSTEMS, peersInstalled, peersNodeProblem } from './peers.ts';

export type Values = Record<string, string | boolean | undefined>;

export function parseBenchArgs(argv: string[], options: NonNullable<ParseArgsConfig['options']>): Values {
  try {
    return parseArgs({ args: argv, allowPositionals: false, strict: true, options }).values as Values;
  } catch (err) {
    const message =
      messageOf(err)
        .split('\n')[0]
        ?.replace(/\. To specify a positional argument.*$/, '') ?? 'bad arguments';
    throw new InputError(`bench: ${message}`);
  }
}

export function integer(
  name: string,
  value: string | boolean | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value).trim();
  if (!/^-?\d+$/.test(text)) throw new InputError(`${name} must be an integer, got ${JSON.stringify(value)}`);
  const n = Number(text);
  if (n < min || n > max) throw new InputError(`${name} must be from ${min} to ${max}, got ${text}`);
  return n;
}

/** A comma-separated list whose every item is one of `allowed`. */
export function listOf<T extends string>(what: string, value: string, allowed: readonly T[]): T[] {
  const items = value.split(',').filter((s) => s !== '');
  for (const s of items)
    if (!(allowed as readonly string[]).includes(s))
      throw new InputError(`bench: unknown ${what} ${JSON.stringify(s)} (use ${allowed.join(', ')})`);
  return items as T[];
}

const SCENARIOS = [
  'burst',
  'cold',
  'startup',
  'pickup',
  'enqueue',
  'process',
  'processes',
  'deep',
  'sustained',
  'limits',
  'perkey',
  'fanin',
  'chain',
  'workflows',
  'history',
  ...DURABLE_SCENARIOS,
] as const;
const DEFAULT_SCENARIOS = 'burst,cold,startup,pickup';

/** The options `jobvisor bench` parses (its help, in src/cli/commands.ts, is tested against this list). */
export const BENCH_ARGS = {
  scenario: { type: 'string' },
  'burst-jobs': { type: 'string' },
  configs: { type: 'string' },
  jobs: { type: 'string' },
  concurrency: { type: 'string' },
  processes: { type: 'string' },
  keys: { type: 'string' },
  runs: { type: 'string' },
  threads: { type: 'string' },
  'jobs-per-thread': { type: 'string' },
  prefetch: { type: 'string' },
  samples: { type: 'string' },
  'deep-pending': { type: 'string' },
  'deep-done': { type: 'string' },
  duration: { type: 'string' },
  retention: { type: 'string' },
  peers: { type: 'string' },
  'fanin-parents': { type: 'string' },
  'chain-length': { type: 'string' },
  workflows: { type: 'string' },
  'history-depths': { type: 'string' },
  sleep: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * The history scenario's depths: integers, `k` and `M` allowed (`0,5M,10M`),
 * from 0 (the empty history every depth is compared with) upwards, since one
 * table grows through them in turn.
 */
export function historyDepths(value: string): number[] {
  const depths = value.split(',').map((item) => {
    const m = /^(\d+)([kM]?)$/.exec(item.trim());
    const n = m ? Number(m[1]) * (m[2] === 'M' ? 1_000_000 : m[2] === 'k' ? 1000 : 1) : Number.NaN;
    if (!Number.isSafeInteger(n) || n > 1_000_000_000)
      throw new InputError(
        `bench: --history-depths takes rows such as 0,5M,10M (at most 1000M), got ${JSON.stringify(item)}`,
      );
    return n;
  });
  if (depths[0] !== 0 || depths.length < 2 || depths.some((d, i) => i > 0 && d <= (depths[i - 1] as number)))
    throw new InputError(`bench: --history-depths must start at 0 and grow, got ${JSON.stringify(value)}`);
  return depths;
}

/** `jobvisor bench`'s options, checked: bad usage is an InputError naming the option. */
export function benchOptions(argv: string[]) {
  const values = parseBenchArgs(argv, BENCH_ARGS);
  const str = (k: string) => values[k] as string | undefined;
  const scenarios = listOf('scenario', str('scenario') ?? DEFAULT_SCENARIOS, SCENARIOS);
  const burstJobs = (str('burst-jobs') ?? '20000,100000')
    .split(',')
    .map((v) => integer('--burst-jobs', v, 1, 10_000_000) as number);
  const configs = listOf(
    'config',
    str('configs') ?? 'concurrency-only,tuned,tuned-keep-none',
    Object.keys(BURST_CONFIGS),
  );
  const jobs = integer('--jobs', str('jobs'), 1, 10_000_000) ?? 20_000;
  const concurrency = integer('--concurrency', str('concurrency'), 1, 10_000) ?? 50;
  const processes = integer('--processes', str('processes'), 1, 64) ?? 3;
  const keys = integer('--keys', str('keys'), 1, 1_000_000) ?? 1000;
  const runs = integer('--runs', str('runs'), 1, 100) ?? 3;
  const samples = integer('--samples', str('samples'), 1, 100_000) ?? 200;
  const shape: QueueShape = {
    concurrency,
    threads: integer('--threads', str('threads'), 1, 256) ?? 1,
    jobsPerThread: integer('--jobs-per-thread', str('jobs-per-thread'), 1, 10_000) ?? concurrency,
    // 2,000: the local buffer of Graphile Worker's fastest configuration (localQueue size 2000).
    prefetch: integer('--prefetch', str('prefetch'), 0, 100_000) ?? 2000,
  };
  const deepPending = integer('--deep-pending', str('deep-pending'), 1000, 100_000_000) ?? 1_000_000;
  const deepDone = integer('--deep-done', str('deep-done'), 0, 100_000_000) ?? 5_000_000;
  const workflow = {
    faninParents: integer('--fanin-parents', str('fanin-parents'), 1, 99_999) ?? 10_000,
    chainLength: integer('--chain-length', str('chain-length'), 2, 100_000) ?? 1000,
    workflows: integer('--workflows', str('workflows'), 1, 25_000) ?? 10_000,
  };
  const depths = historyDepths(str('history-depths') ?? '0,5M,10M,20M');
  let durationMs = 600_000;
  if (values.duration !== undefined) {
    try {
      durationMs = parseDuration(str('duration') as string);
    } catch (err) {
      throw new InputError(`bench: --duration ${messageOf(err)}`);
    }
  }
  let retentionMs: number | undefined;
  if (values.retention !== undefined) {
    try {
      retentionMs = parseDuration(str('retention') as string);
    } catch (err) {
      throw new InputError(`bench: --retention ${messageOf(err)}`);
    }
  }
  let sleepMs = 5000;
  if (values.sleep !== undefined) {
    try {
      sleepMs = parseDuration(str('sleep') as string);
    } catch (err) {
      throw new InputError(`bench: --sleep ${messageOf(err)}`);
    }
  }
  const peerArg = str('peers') ?? 'none';
  const peers =
    peerArg === 'none' ? [] : listOf('peer', peerArg === 'all' ? PEER_SYSTEMS.join(',') : peerArg, PEER_SYSTEMS);
  const peersProblem = peers.length > 0 ? peersNodeProblem() : undefined;
  if (peersProblem) throw new InputError(`bench: ${peersProblem}`);
  if (peers.length > 0 && !peersInstalled())
    throw new InputError('bench: peers are not installed: run bench/peers/install.sh first');

  return {
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
    historyDepths: depths,
    durationMs,
    retentionMs,
    sleepMs,
    peers,
    json: values.json === true,
  };
}
