/**
 * One round of one of jobvisor's systems in a process of its own, as each
 * peer's round runs (bench/peers/run.mjs): `jobvisor bench --json --runs 1`
 * with the round's scenario options, on the same server, told by
 * OWN_ROUND_ENV to measure that one system. So beside the peers jobvisor is
 * measured as they are: a fresh process, warmed by its WARM_UP jobs, then the
 * round. The scenarios with peers use it (burst, perkey, enqueue, process,
 * pickup); cold, startup and processes start their processes anyway. Run in
 * the bench's own process instead, every round after the first finds
 * jobvisor's code warmed by the rounds before it, which a peer's never
 * is: perkey alone on Node 22 ran 16,350 jobs/s in its first round and
 * 19,580-21,744 in the five after, where five rounds each in a fresh process
 * ran 12,760-13,943. Beside the peers the difference was within the runs'
 * spread (burst of 20,000 with Graphile Worker: 37,517 jobs/s in-process,
 * 38,215 one process a round), but only this way is every system measured
 * alike; on 2026-12-07, from the checkout on Node 22, a burst of 20,000 ran
 * 41,954 jobs/s warm in one process and 33,099 one fresh process a round.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../paths.ts';
import type { QueueShape } from './harness.ts';
import type { Row } from './report.ts';
import { ENTRY_BIN, entryAvailable, type Entry } from './startup.ts';

const run = promisify(execFile);

/** Set for a round in its own process: the one system its bench measures. */
export const OWN_ROUND_ENV = 'JOBVISOR_BENCH_SYSTEM';

/** The latest modification of a file under `dir`; 0 without it (an installed package has no src/). */
function newestUnder(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((latest, e) => Math.max(latest, statSync(path.join(e.parentPath, e.name)).mtimeMs), 0);
}

/**
 * What a round of its own runs: the built package (`dist/`), as an app or the
 * image runs jobvisor, when it was built after the last change to src/; else
 * the checkout, its TypeScript through tsx. The checkout is slower: five fresh
 * processes each way, one burst of 20,000 (`tuned-keep-none`, Node 22), ran at
 * 31,279-32,712 jobs/s from the checkout and 34,336-39,719 from dist/.
 */
export function ownRoundEntry(): Entry {
  // Chosen once per bench: a file saved during a run does not switch the rounds after it.
  chosenEntry ??=
    entryAvailable('dist') && statSync(ENTRY_BIN.dist).mtimeMs >= newestUnder(path.join(PACKAGE_ROOT, 'src'))
      ? 'dist'
      : 'checkout';
  return chosenEntry;
}
let chosenEntry: Entry | undefined;

/**
 * How a row's rounds ran (its `extra.process`): each in a process of its own
 * (and from what: `dist` or `checkout`), or in the bench's.
 */
export const processOfRounds = (own: boolean): string => (own ? `one per round (${ownRoundEntry()})` : 'this one');

/** The one system this bench process was asked to measure, if it runs a round of its own. */
export const ownRoundSystem = (): string | undefined => process.env[OWN_ROUND_ENV] || undefined;

/** The options that give a round in its own process the queue shape of this one. */
export const shapeArgs = (shape: QueueShape): string[] => [
  '--concurrency',
  String(shape.concurrency),
  '--threads',
  String(shape.threads),
  '--jobs-per-thread',
  String(shape.jobsPerThread),
  '--prefetch',
  String(shape.prefetch),
];

/**
 * Runs `jobvisor bench --json --runs 1 …scenarioArgs` for `system` alone; its
 * rows (a scenario may report more than one, as pickup's p50 and p99 do).
 */
export async function rowsOnItsOwn(serverUrl: string, scenarioArgs: string[], system: string): Promise<Row[]> {
  const argv = [ENTRY_BIN[ownRoundEntry()], 'bench', '--json', '--runs', '1', ...scenarioArgs];
  const { stdout } = await run(process.execPath, argv, {
    env: { ...process.env, DATABASE_URL: serverUrl, [OWN_ROUND_ENV]: system },
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const rows = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Row)
    .filter((r) => r.system === system);
  if (rows.length === 0)
    throw new Error(`${system}: its round in a process of its own reported nothing: ${stdout.slice(-500)}`);
  return rows;
}

/** Its first row: the round's figure. */
export const roundOnItsOwn = async (serverUrl: string, scenarioArgs: string[], system: string): Promise<Row> =>
  (await rowsOnItsOwn(serverUrl, scenarioArgs, system))[0] as Row;

/** A round's measure: `measure` in this process, or with `serverUrl` (beside the peers) a round of its own. */
export const ownOr =
  (serverUrl: string | undefined, system: string, args: string[], measure: () => Promise<number>) =>
  async (): Promise<number> =>
    serverUrl === undefined ? measure() : (await roundOnItsOwn(serverUrl, args, system)).median;
