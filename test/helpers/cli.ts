/**
 * The jobvisor command run in this test process, for the many bad-input cases
 * where a process start per case would dominate the run. Environment and
 * stdout/stderr are swapped in for the call and restored after it.
 */
import { main } from '../../src/cli/main.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `jobvisor ...args` against `databaseUrl`; `env` adds to a test environment. */
export async function runCliInProcess(
  databaseUrl: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const saved = { ...process.env };
  Object.assign(process.env, { DATABASE_URL: databaseUrl, JOBVISOR_CONFIG: '', NODE_ENV: 'test', ...env });
  const out = { stdout: '', stderr: '' };
  const capture = (key: 'stdout' | 'stderr') =>
    ((chunk: string | Uint8Array) => {
      out[key] += String(chunk);
      return true;
    }) as typeof process.stdout.write;
  const original = {
    stdout: process.stdout.write.bind(process.stdout),
    stderr: process.stderr.write.bind(process.stderr),
  };
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
