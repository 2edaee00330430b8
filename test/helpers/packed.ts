/**
 * The package as a user gets it, for tests that install it into apps of their
 * own: `npm pack` (prepack builds dist/) of a copy of the working tree, so the
 * fresh dist/ never races another test's use of the checkout's; and the
 * commands such a test runs in an app, with a clean environment.
 *
 * packedTarball() packs once for every test that installs the package: the
 * tarball is kept under .jobvisor/pack-<hash>/, the hash taken over every file
 * the pack reads (package.json, tsconfigs, src, bin, migrations, config, the
 * docs, the build scripts) and the lock file, so a change to any of them packs afresh and an
 * unchanged tree reuses the tarball (npm pack's tsc build is most of a minute).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
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

/** A tarball of packedTarball(): its path, and how long its `npm pack` took (when this or an earlier run made it). */
export interface Packed {
  tarball: string;
  packMs: number;
}

/** Every file `packJobvisor` copies, as [path relative to the checkout, full path]. */
function packFiles(): Array<[string, string]> {
  const entries = [...PACK_INPUTS, ...PACK_DOCS, ...PACK_SCRIPTS.map((f) => path.join('scripts', f))];
  const files: Array<[string, string]> = [];
  for (const entry of entries) {
    const full = path.join(ROOT, entry);
    if (!statSync(full).isDirectory()) {
      files.push([entry, full]);
      continue;
    }
    for (const rel of readdirSync(full, { recursive: true, encoding: 'utf8' }).sort()) {
      const file = path.join(full, rel);
      if (statSync(file).isFile()) files.push([path.join(entry, rel), file]);
    }
  }
  return files;
}

/** The hash of everything the pack reads: names and contents. */
export function packInputsHash(): string {
  const hash = createHash('sha256');
  // The lock file too: it pins the TypeScript that prepack builds with.
  const lock: [string, string] = ['package-lock.json', path.join(ROOT, 'package-lock.json')];
  for (const [rel, full] of [...packFiles(), lock]) hash.update(`${rel}\0`).update(readFileSync(full)).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/**
 * The tarball of the working tree as it is now: packed once, then reused
 * until a file the pack reads changes. Read it, never write into its folder.
 * A pack made at the same time by another process is harmless: each packs in
 * a folder of its own and the first rename wins.
 */
export function packedTarball(): Packed {
  const cache = path.join(ROOT, '.jobvisor');
  const dir = path.join(cache, `pack-${packInputsHash()}`);
  const meta = path.join(dir, 'packed.json');
  if (existsSync(meta)) {
    const kept = JSON.parse(readFileSync(meta, 'utf8')) as { file: string; packMs: number };
    return { tarball: path.join(dir, kept.file), packMs: kept.packMs };
  }
  mkdirSync(cache, { recursive: true });
  const work = mkdtempSync(path.join(cache, 'packing-'));
  try {
    const t0 = Date.now();
    const tarball = packJobvisor(work);
    const made = mkdtempSync(path.join(cache, 'packed-'));
    renameSync(tarball, path.join(made, path.basename(tarball)));
    writeFileSync(
      path.join(made, 'packed.json'),
      JSON.stringify({ file: path.basename(tarball), packMs: Date.now() - t0 }),
    );
    // Older packs are of trees that no longer exist.
    for (const old of readdirSync(cache).filter((n) => n.startsWith('pack-') && n !== path.basename(dir)))
      rmSync(path.join(cache, old), { recursive: true, force: true });
    try {
      renameSync(made, dir);
    } catch {
      rmSync(made, { recursive: true, force: true }); // another process packed the same tree first
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return packedTarball();
}
