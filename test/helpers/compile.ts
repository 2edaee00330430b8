/**
 * jobvisor's sources as the package ships them (JavaScript in dist/), made
 * quickly for tests that must run without any TypeScript loader and for the
 * child processes of the system tests (a user's `jobvisor start` runs dist/):
 * each file is transpiled on its own by esbuild, the transpiler tsx itself
 * uses (no type check; `tsc` does that elsewhere), with the build's
 * relative-import rewriting (`./x.ts` → `./x.js`). The copy sits under
 * .jobvisor/ in the checkout, so its imports find the checkout's node_modules,
 * beside links to package.json, bench/, config/ and migrations/ (PACKAGE_ROOT
 * is dist/..) and a copy of bin/ (Node resolves a linked main module to its
 * target, whose folder has src/): with no src/ beside it, the copy's
 * bin/jobvisor.js runs dist/ as an installed package's does.
 *
 * test/run.ts makes one copy per run and names it in JOBVISOR_TEST_COMPILED;
 * sharedPackage() returns it (or makes one for this process when a file runs
 * without test/run.ts).
 */
import { cpSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** What the compiled package's root links to in the checkout. */
const LINKED = ['package.json', 'bench', 'config', 'migrations'];

export interface CompiledPackage {
  root: string;
  dist: string;
  /** Its `bin/jobvisor.js`: the command as an installed package runs it. */
  bin: string;
  remove(): void;
}

/** Every .ts file under `dir` (declarations excepted). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

/** A relative import of a .ts file, in esbuild's output (double quotes): static, dynamic or re-export. */
export const RELATIVE_TS = /((?:\bfrom|\bimport)\s*\(?\s*)"(\.{1,2}\/[^"]*?)\.ts"/g;

/** Whether a process with this id is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Copies left by runs that were killed before they could remove them. */
function removeStale(): void {
  let names: string[];
  try {
    names = readdirSync(path.join(ROOT, '.jobvisor'));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^(?:compiled|tests)-.+-(\d+)$/.exec(name)?.[1]);
    if (pid > 0 && !alive(pid)) rmSync(path.join(ROOT, '.jobvisor', name), { recursive: true, force: true });
  }
}

/** Compiles src/ into .jobvisor/compiled-<label>-<pid>/dist (about a second). */
export function compilePackage(label: string): CompiledPackage {
  removeStale();
  const root = path.join(ROOT, '.jobvisor', `compiled-${label}-${process.pid}`);
  rmSync(root, { recursive: true, force: true });
  const dist = path.join(root, 'dist');
  const result = buildSync({
    entryPoints: sources(path.join(ROOT, 'src')),
    outbase: path.join(ROOT, 'src'),
    outdir: dist,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    write: false,
    logLevel: 'silent',
  });
  for (const file of result.outputFiles) {
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.text.replace(RELATIVE_TS, '$1"$2.js"'));
  }
  for (const name of LINKED) symlinkSync(path.join(ROOT, name), path.join(root, name));
  cpSync(path.join(ROOT, 'bin'), path.join(root, 'bin'), { recursive: true });
  return {
    root,
    dist,
    bin: path.join(root, 'bin', 'jobvisor.js'),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

let own: CompiledPackage | undefined;

/**
 * The compiled package of this test run (JOBVISOR_TEST_COMPILED, made once by
 * test/run.ts), else one made for this process and removed when it exits.
 * Shared: read it, never write into it.
 */
export function sharedPackage(): CompiledPackage {
  const given = process.env.JOBVISOR_TEST_COMPILED;
  if (given) {
    return {
      root: given,
      dist: path.join(given, 'dist'),
      bin: path.join(given, 'bin', 'jobvisor.js'),
      remove: () => {},
    };
  }
  if (!own) {
    const made = compilePackage('shared');
    process.on('exit', () => made.remove());
    own = made;
  }
  return own;
}
