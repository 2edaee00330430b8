/**
 * The package as a user gets it, for tests that install it into apps of their
 * own: `npm pack` (prepack builds dist/) of a copy of the working tree, so the
 * fresh dist/ never races another test's use of the checkout's; and the
 * commands such a test runs in an app, with a clean environment.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** What the packed tree needs: everything `files` ships and what prepack builds from. */
const PACK_INPUTS = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'bin', 'migrations', 'config'];
const PACK_SCRIPTS = ['clean-dist.mjs', 'cjs-types.mjs'];
/** The files of the checkout's root that the package ships besides `files`' folders (npm adds LICENSE itself). */
export const PACK_DOCS = ['README.md', 'LICENSE', 'CHANGELOG.md'];

/** The checkout's version of a dependency, so that apps install what the project is tested with. */
export function depVersion(name: string): string {
  return (
    JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }
  ).version;
}

/** A child environment without npm's own variables (npm test sets npm_config_*) or jobvisor's. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(npm_|JOBVISOR_|OTEL_|DATABASE_URL|NODE_ENV$|METRICS_PORT$)/.test(k)) env[k] = v;
  return { ...env, ...extra };
}

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export function exec(command: string, args: string[], cwd: string, env = cleanEnv(), timeout = 240_000): Ran {
  const t0 = Date.now();
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', ms: Date.now() - t0 };
}

/** `exec` without blocking: tests that run several compilers at once. */
export function execAsync(
  command: string,
  args: string[],
  cwd: string,
  env = cleanEnv(),
  timeout = 240_000,
): Promise<Ran> {
  const t0 = Date.now();
  const child = spawn(command, args, { cwd, env, timeout });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) =>
    child.on('close', (status) => resolve({ status, stdout, stderr, ms: Date.now() - t0 })),
  );
}

/** `npm install` into an app; the reason to skip when the registry (and npm's cache) cannot serve it. */
export function npmInstall(app: string, packages: string[]): Ran & { offline?: string } {
  const r = exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...packages], app);
  if (r.status !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|ECONNRESET/.test(r.stderr))
    return { ...r, offline: `the npm registry is unreachable and npm's cache lacks a package: ${r.stderr.trim()}` };
  assert.equal(r.status, 0, `npm install in ${app} failed:\n${r.stderr}`);
  return r;
}

export function write(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
}

/** Packs a copy of the working tree in `work`; the tarball's path. */
export function packJobvisor(work: string): string {
  const tree = path.join(work, 'tree');
  for (const entry of [...PACK_INPUTS, ...PACK_DOCS])
    cpSync(path.join(ROOT, entry), path.join(tree, entry), { recursive: true });
  for (const script of PACK_SCRIPTS) cpSync(path.join(ROOT, 'scripts', script), path.join(tree, 'scripts', script));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'));
  const packed = exec('npm', ['pack', '--json', '--pack-destination', work], tree);
  assert.equal(packed.status, 0, `npm pack failed:\n${packed.stderr}`);
  return path.join(work, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]?.filename ?? '');
}
