/**
 * `npm test`'s checks before its test files (test/run.ts): the type-check and
 * the lint (npm run lint), side by side.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

/**
 * The type-check and the lint (npm run lint), side by side: each is one
 * thread's work, so on two cores the pair takes about as long as the longer
 * one. Each one's output is printed whole when it ends; false when either failed.
 */
export async function checks(root: string): Promise<boolean> {
  process.stdout.write('type-checking src and test, and linting (npm run lint)…\n');
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
  const results = await Promise.all([
    runCheck(root, 'type-check', process.execPath, [tsc, '--noEmit', '-p', path.join(root, 'tsconfig.check.json')]),
    runCheck(root, 'lint', 'npm', ['run', '--silent', 'lint']),
  ]);
  return results.every(Boolean);
}

/** Runs one check to its end, then prints its output and how long it took; whether it passed. */
function runCheck(root: string, name: string, command: string, args: string[]): Promise<boolean> {
  const started = performance.now();
  const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
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
