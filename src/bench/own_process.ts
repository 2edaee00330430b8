/**
 * One round of one of jobvisor's systems in a process of its own, as each
 * peer's round runs (bench/peers/run.mjs): `jobvisor bench --json --runs 1`
 * with the round's scenario options, on the same server, told by
 * OWN_ROUND_ENV to measure that one system. So beside the peers jobvisor is
 * measured as they are: a fresh process, warmed by its WARM_UP jobs, then the
 * round. Run in the bench's own process instead, every round after the first
 * finds jobvisor's code warmed by the rounds before it, which a peer's never
 * is: perkey alone on Node 22 ran 16,350 jobs/s in its first round and
 * 19,580-21,744 in the five after, where five rounds each in a fresh process
 * ran 12,760-13,943. Beside the peers the difference was within the runs'
 * spread (burst of 20,000 with Graphile Worker: 37,517 jobs/s in-process,
 * 38,215 one process a round), but only this way is every system measured
 * alike.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../paths.ts';
import type { Row } from './report.ts';

const run = promisify(execFile);

/** Set for a round in its own process: the one system its bench measures. */
export const OWN_ROUND_ENV = 'JOBVISOR_BENCH_SYSTEM';

/** How a row's rounds ran (its `extra.process`): each in a process of its own, or in the bench's. */
export const processOfRounds = (own: boolean): string => (own ? 'one per round' : 'this one');

/** The one system this bench process was asked to measure, if it runs a round of its own. */
export const ownRoundSystem = (): string | undefined => process.env[OWN_ROUND_ENV] || undefined;

/** Runs `jobvisor bench --json --runs 1 …scenarioArgs` for `system` alone; its row. */
export async function roundOnItsOwn(serverUrl: string, scenarioArgs: string[], system: string): Promise<Row> {
  const argv = [path.join(PACKAGE_ROOT, 'bin/jobvisor.js'), 'bench', '--json', '--runs', '1', ...scenarioArgs];
  const { stdout } = await run(process.execPath, argv, {
    env: { ...process.env, DATABASE_URL: serverUrl, [OWN_ROUND_ENV]: system },
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const row = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Row)
    .find((r) => r.system === system);
  if (!row) throw new Error(`${system}: its round in a process of its own reported nothing: ${stdout.slice(-500)}`);
  return row;
}
