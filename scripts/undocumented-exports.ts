/**
 * The public exports of the package's entry points (src/index.ts, the root,
 * and src/entry/*.ts, its subpaths) and whether each has a doc comment: the
 * `/** … *\/` directly above the exported declaration (a file's header comment
 * does not count). test/packaging/docs_reference.test.ts fails on any export
 * without one.
 */
import path from 'node:path';
import ts from 'typescript';
import { docOf, programOf, ROOT } from './ts-program.ts';

export interface ExportDoc {
  /** The name, and the entry point that exports it (`src/index.ts`, `src/entry/worker.ts`, …). */
  name: string;
  documented: boolean;
}

/** The package's entry points, as source files. */
export const ENTRY_FILES = ['src/index.ts', 'src/entry/client.ts', 'src/entry/worker.ts', 'src/entry/dashboard.ts'];

/** Every export of every entry point, in name order, and whether its declaration has a doc comment. */
export function publicExports(): ExportDoc[] {
  const program = programOf(ENTRY_FILES);
  const checker = program.getTypeChecker();
  const docs = new Map<string, boolean>();
  for (const file of ENTRY_FILES) {
    const source = program.getSourceFile(path.join(ROOT, file));
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    if (!moduleSymbol) throw new Error(`${file}: no module symbol`);
    for (const s of checker.getExportsOfModule(moduleSymbol)) {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      const name = `${s.getName()} (${file})`;
      docs.set(name, docOf(target, checker) !== '');
    }
  }
  return [...docs].map(([name, documented]) => ({ name, documented })).sort((a, b) => a.name.localeCompare(b.name));
}
