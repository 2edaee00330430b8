/**
 * jobvisor's sources as the package ships them (JavaScript in dist/), made
 * quickly for tests that must run without any TypeScript loader: each file is
 * transpiled on its own (no type check; `tsc` does that elsewhere), with the
 * same relative-import rewriting as the build. The copy sits under .jobvisor/
 * in the checkout, so its imports find the checkout's node_modules, beside
 * links to package.json, config/ and migrations/ (PACKAGE_ROOT is dist/..).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CompiledPackage {
  root: string;
  dist: string;
  remove(): void;
}

export function compilePackage(label: string): CompiledPackage {
  const root = path.join(ROOT, '.jobvisor', `compiled-${label}-${process.pid}`);
  rmSync(root, { recursive: true, force: true });
  const dist = path.join(root, 'dist');
  const walk = (from: string, to: string): void => {
    mkdirSync(to, { recursive: true });
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      const source = path.join(from, entry.name);
      if (entry.isDirectory()) walk(source, path.join(to, entry.name));
      else if (entry.name.endsWith('.ts')) {
        const out = ts.transpileModule(readFileSync(source, 'utf8'), {
          fileName: source,
          compilerOptions: {
            module: ts.ModuleKind.ES2022,
            target: ts.ScriptTarget.ES2022,
            rewriteRelativeImportExtensions: true,
            esModuleInterop: true,
          },
        });
        writeFileSync(path.join(to, entry.name.replace(/\.ts$/, '.js')), out.outputText);
      }
    }
  };
  walk(path.join(ROOT, 'src'), dist);
  for (const name of ['package.json', 'config', 'migrations'])
    symlinkSync(path.join(ROOT, name), path.join(root, name));
  return { root, dist, remove: () => rmSync(root, { recursive: true, force: true }) };
}
