/**
 * Type tests that expect errors: a line of a fixture that ends with
 * `// error TS2345` must report exactly that error, and no other line any.
 * Errors are compared as `file:line TSnnnn`, from the compiler API (the
 * checkout's sources) or from tsc's output (an app's installed package).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const MARK = /\/\/ error (TS\d+)\s*$/;

/** The errors the fixtures' lines are marked with. */
export function markedErrors(dir: string, files: readonly string[]): string[] {
  const marked: string[] = [];
  for (const file of files)
    readFileSync(path.join(dir, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const m = MARK.exec(line);
        if (m) marked.push(`${file}:${i + 1} ${m[1]}`);
      });
  return marked.sort();
}

/** The errors in tsc's output (`file(line,col): error TSnnnn: …`), file names relative to tsc's folder. */
export function reportedErrors(output: string): string[] {
  return [...output.matchAll(/^(.+?)\((\d+),\d+\): error (TS\d+):/gm)]
    .map((m) => `${m[1] as string}:${m[2] as string} ${m[3] as string}`)
    .sort();
}

/**
 * Type-checks `files` of `dir` under `dir/tsconfig.json` (whose `paths` map
 * `jobvisor` to the checkout's src/index.ts) and returns the errors found in
 * those files, with their messages. Only these files are checked: the sources
 * they import are read for their declarations, as an app reads the package's.
 */
export function checkFixtures(dir: string, files: readonly string[]): { errors: string[]; text: string } {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(dir, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error(`${dir}/tsconfig.json could not be read`);
  const roots = files.map((f) => path.join(dir, f));
  const program = ts.createProgram({ rootNames: roots, options: config.options });
  const diagnostics = roots.flatMap((file) => {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`${file} is not in the program`);
    return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
  });
  const errors = diagnostics.map((d) => {
    const { line } = d.file ? d.file.getLineAndCharacterOfPosition(d.start ?? 0) : { line: -1 };
    return `${path.relative(dir, d.file?.fileName ?? '?')}:${line + 1} TS${d.code}`;
  });
  const text = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => dir,
    getNewLine: () => '\n',
  });
  return { errors: errors.sort(), text };
}
