/**
 * `npm test`'s checks before its test files (test/run.ts): the type-check and
 * the lint (npm run lint's three steps), side by side.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * npm run typecheck (TypeScript 7, the native compiler: 2.4 s where 5.9 took
 * 21 s on src and test; the build and the package's type tests keep 5.9, which
 * typescript-eslint needs) and npm run lint's eslint, prettier and knip, as
 * four processes side by side: run one after the other, the lint's steps left
 * a core idle for 34 of its 55 s. Each one's output is printed whole when it
 * ends; false when any failed.
 */
export async function checks(root: string): Promise<boolean> {
  process.stdout.write('type-checking src and test, and linting (npm run lint: eslint, prettier, knip)…\n');
  const results = await Promise.all(checkSteps(root).map((step) => runCheck(root, step.name, step.command)));
  return results.every(Boolean);
}

/** package.json's `typecheck` script, and its `lint` script's steps (`a && b && c`), each named. */
function checkSteps(root: string): Array<{ name: string; command: string }> {
  const { scripts } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: { typecheck: string; lint: string };
  };
  const lint = scripts.lint.split(' && ').map((command) => ({ name: command.split(' ')[0] as string, command }));
  return [{ name: 'type-check', command: scripts.typecheck }, ...lint];
}

/**
 * Runs one check to its end as npm runs a script (by the shell, node_modules/.bin first in
 * PATH), then prints its output and how long it took; whether it passed.
 */
function runCheck(root: string, name: string, command: string): Promise<boolean> {
  const bin = path.join(root, 'node_modules/.bin');
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
  const started = performance.now();
  const child = spawn('sh', ['-c', command], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) =>
    child.on('close', (code) => {
      const s = ((performance.now() - started) / 1000).toFixed(1);
      process.stdout.write(`${code === 0 ? '✔' : '✖'} ${name} (${s} s)\n${Buffer.concat(chunks).toString()}`);
      resolve(code === 0);
    }),
  );
}
