/**
 * The jobvisor command run in this test process, for the many bad-input cases
 * where a process start per case would dominate the run. Environment and
 * stdout/stderr are swapped in for the call and restored after it.
 */
import { spawn } from 'node:child_process';
import { main } from '../../src/cli/main.ts';
import { BIN } from './supervisor.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a child process to its exit, collecting what it printed. */
export function runProcess(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string },
): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `jobvisor ...args` as a child process against `databaseUrl`; `env` adds to a test environment. */
export function runCli(databaseUrl: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runProcess(process.execPath, [BIN, ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, JOBVISOR_CONFIG: '', NODE_ENV: 'test', ...env },
  });
}

/** Runs `jobvisor bench ...args` as a child process on the test server, where bench makes its own databases. */
export function runBench(args: string[]): Promise<CliRun> {
  return runProcess(process.execPath, [BIN, 'bench', ...args], {
    env: { ...process.env, DATABASE_URL: process.env.JOBVISOR_TEST_DATABASE_URL, JOBVISOR_CONFIG: '' },
  });
}

/** Runs `jobvisor ...args` against `databaseUrl` in this process; `env` adds to a test environment. */
export async function runCliInProcess(
  databaseUrl: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const saved = { ...process.env };
  Object.assign(process.env, { DATABASE_URL: databaseUrl, JOBVISOR_CONFIG: '', NODE_ENV: 'test', ...env });
  const out = { stdout: '', stderr: '' };
  const original = {
    stdout: process.stdout.write.bind(process.stdout),
    stderr: process.stderr.write.bind(process.stderr),
  };
  // The CLI writes text. The test runner's own report (binary, written by this
  // process while a test awaits the CLI) passes through: captured, a test's
  // result would never reach the runner.
  const capture = (key: 'stdout' | 'stderr') =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (typeof chunk !== 'string') return (original[key] as (...a: unknown[]) => boolean)(chunk, ...rest);
      out[key] += chunk;
      return true;
    }) as typeof process.stdout.write;
  process.stdout.write = capture('stdout');
  process.stderr.write = capture('stderr');
  try {
    return { code: await main(args), ...out };
  } finally {
    process.stdout.write = original.stdout;
    process.stderr.write = original.stderr;
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}
