/**
 * The public exports of src/index.ts (the root, and so every entry point of
 * src/entry/) and whether each has a doc comment: the `/** … *\/` directly
 * above the exported declaration (a file's header comment does not count).
 * test/packaging/docs_reference.test.ts fails on any export without one.
 */
import path from 'node:path';
import ts from 'typescript';
import { docOf, programOf, ROOT } from './ts-program.ts';

export interface ExportDoc {
  name: string;
  documented: boolean;
}

/** Every export of src/index.ts, in name order, and whether its declaration has a doc comment. */
export function publicExports(): ExportDoc[] {
  const program = programOf(['src/index.ts']);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path.join(ROOT, 'src/index.ts'));
  const moduleSymbol = source && checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error('src/index.ts: no module symbol');
  return checker
    .getExportsOfModule(moduleSymbol)
    .map((s) => {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      return { name: s.getName(), documented: docOf(target, checker) !== '' };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}
