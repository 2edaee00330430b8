/**
 * A TypeScript program over some of the repository's files, with the compiler
 * options of its tsconfig.json: what the reference generators and the
 * doc-comment check read declarations and doc comments from.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The repository's compiler options (tsconfig.json), without emitting. */
export function compilerOptions(): ts.CompilerOptions {
  const file = path.join(ROOT, 'tsconfig.json');
  const read = ts.readConfigFile(file, (f) => ts.sys.readFile(f)) as { config: object };
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT);
  return { ...parsed.options, noEmit: true };
}

export function programOf(files: string[]): ts.Program {
  return ts.createProgram({ rootNames: files.map((f) => path.resolve(ROOT, f)), options: compilerOptions() });
}

/** A symbol's doc comment as plain text ('' when it has none). */
export function docOf(symbol: ts.Symbol, checker: ts.TypeChecker): string {
  return ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
}

export interface Member {
  name: string;
  /** The type as written in the source. */
  type: string;
  optional: boolean;
  doc: string;
}

/** The declared members of an interface or object type literal, in source order. */
export function membersOf(node: ts.InterfaceDeclaration | ts.TypeLiteralNode, checker: ts.TypeChecker): Member[] {
  const source = node.getSourceFile();
  return node.members.filter(ts.isPropertySignature).map((m) => {
    const symbol = m.name && checker.getSymbolAtLocation(m.name);
    return {
      name: m.name.getText(source).replace(/^'(.*)'$/, '$1'),
      type: m.type ? m.type.getText(source).replace(/\s+/g, ' ') : 'unknown',
      optional: m.questionToken !== undefined,
      doc: symbol ? docOf(symbol, checker) : '',
    };
  });
}

/** The interface named `name` declared in `file` (relative to the repository). */
export function interfaceIn(program: ts.Program, file: string, name: string): ts.InterfaceDeclaration {
  const source = program.getSourceFile(path.resolve(ROOT, file));
  const found = source?.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name,
  );
  if (!found) throw new Error(`${file}: no interface ${name}`);
  return found;
}
