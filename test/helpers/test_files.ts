/**
 * Which test files a run of test/run.ts runs: the files and folders named on
 * its command line, or everything under test/.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** `--list [FILE|DIR...]`: the files a run would run (all under test/ by default), and how many. */
export function list(root: string, args: string[]): number {
  const found = expand(root, args.length > 0 ? args : ['test']);
  if (typeof found === 'string') {
    process.stderr.write(`${found}\n`);
    return 2;
  }
  const top = found.filter((f) => path.dirname(f) === 'test').length;
  process.stdout.write(`${found.join('\n')}\n${found.length} test files${top > 0 ? ` (${top} not in a tier)` : ''}\n`);
  return 0;
}

/**
 * The test files the arguments name: files as given, folders searched for
 * `*.test.ts` (fixtures and helpers excepted), sorted; or why not.
 */
export function expand(root: string, args: string[]): string[] | string {
  const found: string[] = [];
  for (const arg of args) {
    const rel = path.relative(root, path.resolve(arg));
    if (!existsSync(arg)) return `no such test file or folder: ${arg}`;
    if (!statSync(arg).isDirectory()) {
      found.push(rel);
      continue;
    }
    const inside = readdirSync(arg, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => path.join(rel, f))
      .filter((f) => !/(^|\/)(fixtures|helpers|node_modules)\//.test(f));
    found.push(...inside);
  }
  return [...new Set(found)].sort();
}
