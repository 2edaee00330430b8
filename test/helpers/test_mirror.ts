/**
 * The test files as JavaScript, so that each test process runs on plain
 * `node`, without tsx. Under `node --import tsx` a process paid about half a
 * second of CPU before its first test (tsx's registration, then esbuild for
 * each module it imported), and on Node.js 20 every worker thread it started
 * got a loader-hooks thread of its own: the unit tier took 34 s of CPU with
 * tsx and 19 s without.
 *
 * test/run.ts makes one mirror per run under .jobvisor/tests-<label>-<pid>:
 *   - test/**\/*.ts compiled by esbuild (each file on its own, as tsx does),
 *     with an inline source map, so that a failure's stack names the .ts line;
 *   - `import.meta.url` (and .dirname, .filename) of each compiled file is its
 *     .ts file's in the checkout: every path a test derives from it is what it
 *     was under tsx;
 *   - imports of src/ point at the run's compiled copy of src
 *     (test/helpers/compile.ts), the same modules the worker threads load;
 *     imports between test files at the compiled neighbour;
 *   - what else a relative import may reach is linked: test/fixtures, the
 *     other files under test/ and every top-level entry of the checkout.
 * A file that imports, itself or through a test module it imports, a .ts file
 * outside test/ and src/ (a TypeScript fixture), or that imports a computed
 * path, runs under tsx as before: fileOf() returns undefined for it.
 */
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { RELATIVE_TS, type CompiledPackage } from './compile.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TEST = path.join(ROOT, 'test');
const SRC = path.join(ROOT, 'src');
const FIXTURES = path.join(TEST, 'fixtures');
/** Not linked into the mirror: what it replaces, and what must not be shared. */
const NOT_LINKED = new Set(['test', '.git', '.jobvisor']);
/** A dynamic import of a computed specifier, in esbuild's output. */
const COMPUTED_IMPORT = /\bimport\((?!\s*")/;

export interface TestMirror {
  root: string;
  /** The compiled file to run for a test file (`test/…/x.test.ts`), or undefined when it needs tsx. */
  fileOf(name: string): string | undefined;
  remove(): void;
}

/** Every file under `dir`, fixtures excepted. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && !path.join(e.parentPath, e.name).startsWith(FIXTURES + path.sep))
    .map((e) => path.join(e.parentPath, e.name));
}

const compilable = (file: string) => file.endsWith('.ts') && !file.endsWith('.d.ts');

/** Compiles test/ into a mirror whose src imports go to `compiled`; see the file comment. */
export function compileTests(compiled: CompiledPackage, label: string): TestMirror {
  const root = path.join(ROOT, '.jobvisor', `tests-${label}-${process.pid}`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  for (const name of readdirSync(ROOT))
    if (!NOT_LINKED.has(name)) symlinkSync(path.join(ROOT, name), path.join(root, name));
  const mirrorOf = (file: string) => path.join(root, path.relative(ROOT, file));
  const files = filesUnder(TEST);
  for (const file of files.filter((f) => !compilable(f))) {
    mkdirSync(path.dirname(mirrorOf(file)), { recursive: true });
    symlinkSync(file, mirrorOf(file));
  }
  mkdirSync(mirrorOf(TEST), { recursive: true });
  symlinkSync(FIXTURES, mirrorOf(FIXTURES));

  const sources = files.filter(compilable);
  const result = buildSync({
    entryPoints: sources,
    outbase: TEST,
    outdir: mirrorOf(TEST),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    // The checkout's URL of the file, from the banner below.
    define: {
      'import.meta.url': '__checkoutUrl',
      'import.meta.dirname': '__checkoutDirname',
      'import.meta.filename': '__checkoutFilename',
    },
    banner: { js: banner(pathToFileURL(root).href, pathToFileURL(ROOT).href) },
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    write: false,
    logLevel: 'silent',
  });
  /** Per test module (source path): the test modules it imports, and whether it imports a .ts tsx must load. */
  const graph = new Map<string, { imports: string[]; foreign: boolean }>();
  for (const out of result.outputFiles) {
    const source = path.join(TEST, path.relative(mirrorOf(TEST), out.path)).replace(/\.js$/, '.ts');
    const node = { imports: [] as string[], foreign: COMPUTED_IMPORT.test(out.text) };
    graph.set(source, node);
    const text = out.text.replace(RELATIVE_TS, (whole, head: string, stem: string) => {
      const spec = `${stem}.ts`;
      const target = path.resolve(path.dirname(source), spec);
      if (target.startsWith(SRC + path.sep)) {
        const js = path.join(compiled.dist, path.relative(SRC, target)).replace(/\.ts$/, '.js');
        return `${head}"${relativeSpec(path.dirname(out.path), js)}"`;
      }
      if (target.startsWith(TEST + path.sep) && !target.startsWith(FIXTURES + path.sep)) {
        node.imports.push(target);
        return `${head}"${spec.replace(/\.ts$/, '.js')}"`;
      }
      node.foreign = true;
      return whole;
    });
    mkdirSync(path.dirname(out.path), { recursive: true });
    writeFileSync(out.path, text);
  }
  const needsTsx = (file: string, seen = new Set<string>()): boolean => {
    const node = graph.get(file);
    if (!node || seen.has(file)) return false;
    seen.add(file);
    return node.foreign || node.imports.some((f) => needsTsx(f, seen));
  };
  return {
    root,
    fileOf: (name) => {
      const source = path.resolve(ROOT, name);
      return graph.has(source) && !needsTsx(source) ? mirrorOf(source).replace(/\.ts$/, '.js') : undefined;
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Declares the checkout's URL, folder and path of the module it heads, from the mirror's. */
function banner(mirrorUrl: string, checkoutUrl: string): string {
  return [
    'import { dirname as __checkoutDir } from "node:path";',
    'import { fileURLToPath as __checkoutPath } from "node:url";',
    `const __checkoutUrl = import.meta.url.replace(${JSON.stringify(mirrorUrl)}, ${JSON.stringify(checkoutUrl)}).replace(/\\.js$/, ".ts");`,
    'const __checkoutFilename = __checkoutPath(__checkoutUrl);',
    'const __checkoutDirname = __checkoutDir(__checkoutFilename);',
  ].join('\n');
}

/** `to` as an import specifier relative to `fromDir` (always starting with ./ or ../). */
function relativeSpec(fromDir: string, to: string): string {
  const rel = path.relative(fromDir, to).split(path.sep).join('/');
  return rel.startsWith('.') ? rel : `./${rel}`;
}
