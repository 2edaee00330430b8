/**
 * One supervisor against two on one limited queue (`globalConcurrency` 50, or
 * with `--per-key` `perKeyConcurrency` 1 over 1,000 keys: the `limits`
 * scenario's variants of src/bench/limits.ts), in interleaved rounds (one,
 * two; then two, one; …), each on a fresh database, with the ratio of each
 * round: issue 48 asks that two supervisors are not slower than one. Both
 * supervisors of a round run in this process, as the scenario's do, so they
 * share one event loop: `--unlimited` measures the same pair on the queue
 * without a limit (the scenario's "no limit"), which says how much of the
 * ratio is the second supervisor itself rather than the limit.
 *
 * `--split` (with `--per-key`) adds a third variant: the two supervisors with
 * the same keys and jobs split in two, each supervisor serving a queue of its
 * own with half the keys. No key is then walked by both, which says how much
 * of the pair's loss is their walks crossing each other's keys.
 *
 *   DATABASE_URL=postgres://… npx tsx bench/limits_pair.ts [--rounds 11] [--jobs 20000] [--per-key [--split] | --unlimited]
 */
import { parseArgs } from 'node:util';
import { createBenchDatabase } from '../src/bench/database.ts';
import { LIMITS_VARIANTS, limitsBurst } from '../src/bench/limits.ts';
import { median } from '../src/bench/stats.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '11' },
    jobs: { type: 'string', default: '20000' },
    'per-key': { type: 'boolean', default: false },
    split: { type: 'boolean', default: false },
    unlimited: { type: 'boolean', default: false },
  },
});
const server = process.env.DATABASE_URL;
if (!server) throw new Error('set DATABASE_URL to a PostgreSQL server (a database is created there and dropped)');
if (args.split && !args['per-key']) throw new Error('--split needs --per-key');
const one = args.unlimited ? 'no limit' : args['per-key'] ? 'perKeyConcurrency 1, 1,000 keys' : 'globalConcurrency 50';
const two = `${one}, two supervisors`;
const split = `${one}, two supervisors, each a queue of half the keys`;
const variants = {
  ...LIMITS_VARIANTS,
  [two]: LIMITS_VARIANTS[two] ?? { ...LIMITS_VARIANTS[one]!, supervisors: 2 },
  [split]: { ...LIMITS_VARIANTS[one]!, supervisors: 2, splitKeys: true },
};
const names = args.split ? [one, two, split] : [one, two];
const results: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));

for (let r = 0; r < Number(args.rounds); r++)
  for (const name of r % 2 === 0 ? names : [...names].reverse()) {
    const db = await createBenchDatabase(server, 'limits_pair');
    try {
      (results[name] as number[]).push(await limitsBurst(db, Number(args.jobs), variants[name]!));
    } finally {
      await db.drop();
    }
  }
for (const name of names)
  console.log(
    `${name}: median ${Math.round(median(results[name]!))} jobs/s (${results[name]!.map(Math.round).join(', ')})`,
  );
for (const name of names.slice(1)) {
  const ratios = (results[name] as number[]).map((v, i) => v / (results[one] as number[])[i]!);
  console.log(
    `${name} ÷ one, per round: ${ratios.map((x) => x.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)}`,
  );
}
