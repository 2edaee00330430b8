/**
 * Runs test files for test/run.ts: each file in its own `node --test` process,
 * so its wall-clock time is known, at most `concurrency` at a time, the slowest
 * of the last run first (the tail of a run is then short files, not one long
 * one started last; files never timed go first, by tier), and the files that must run alone one at a time after
 * the rest. A file's output is printed whole when it ends, so files running
 * side by side do not interleave.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** One test file's process: how long it took and how it ended. */
export interface FileRun {
  file: string;
  ms: number;
  /**
   * CPU time of the file's process and the processes it waited for (its
   * supervisors, tools), user and system, in ms; absent off Linux. Not the
   * shared PostgreSQL server's. Approximate when two files end together.
   */
  cpuMs?: number;
  /** The exit status of `node --test` (0: every test passed or was skipped). */
  status: number;
  /** When it failed: the reporter's account of the failing tests, shortened (failureDetail). */
  failures?: string;
}

export interface ScheduleOptions {
  /** The node binary that runs the tests. */
  node: string;
  files: string[];
  /** How many files run at once, besides the ones that run alone. */
  concurrency: number;
  /** Files that run with nothing beside them (timing tests). */
  alone: (file: string) => boolean;
  /** Milliseconds each file took last time, to start the slowest first; unknown files first. */
  expected: Record<string, number>;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Where each file's output goes when it ends (stdout by default). */
  write?: (text: string) => void;
}

/** Runs the files and returns one FileRun per file, in the order they ended. */
export async function runFiles(opts: ScheduleOptions): Promise<FileRun[]> {
  const byCost = (a: string, b: string): number =>
    (opts.expected[b] ?? Infinity) - (opts.expected[a] ?? Infinity) || tierRank(a) - tierRank(b) || a.localeCompare(b);
  const together = opts.files.filter((f) => !opts.alone(f)).sort(byCost);
  const alone = opts.files.filter((f) => opts.alone(f)).sort(byCost);
  const runs: FileRun[] = [];
  reapedCpuMs(); // what ran before (the type-check, lint) is not a file's
  const next = async (): Promise<void> => {
    for (let file = together.shift(); file !== undefined; file = together.shift()) {
      runs.push(await runFile(opts, file));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, next));
  for (const file of alone) runs.push(await runFile(opts, file));
  return runs;
}

/**
 * Files with no duration yet (a clean clone) start by tier, the costly tiers
 * first: a system or packaging file started last would be the run's tail.
 */
const TIER_ORDER = ['packaging', 'system', 'plans', 'integration', 'db', 'unit'];

function tierRank(file: string): number {
  const at = TIER_ORDER.indexOf(path.basename(path.dirname(file)));
  return at < 0 ? TIER_ORDER.length : at;
}

/** A file's time limit: 5 min, more for the files whose load is their point. */
const DEFAULT_TIMEOUT_MS = 300_000;
const TIMEOUT_MS: Record<string, number> = {
  // 1,200 jobs of 900 KB through two supervisors: 618 s measured at load average 30 (RELIABILITY.md, 35).
  'chaos_big_payloads.test.ts': 900_000,
};

function runFile(opts: ScheduleOptions, file: string): Promise<FileRun> {
  const started = performance.now();
  const timeout = TIMEOUT_MS[path.basename(file)] ?? DEFAULT_TIMEOUT_MS;
  const args = ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-timeout=${timeout}`, file];
  const child = spawn(opts.node, args, {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => chunks.push(c));
  return new Promise<FileRun>((resolve) => {
    child.on('close', (code, signal) => {
      const ms = Math.round(performance.now() - started);
      const status = code ?? (signal ? 1 : 0);
      const head = `${status === 0 ? '✔' : '✖'} ${file} (${(ms / 1000).toFixed(1)} s)\n`;
      const output = Buffer.concat(chunks).toString();
      (opts.write ?? ((t: string) => process.stdout.write(t)))(head + indent(output));
      const cpu = reapedCpuMs();
      resolve({
        file,
        ms,
        ...(cpu === undefined ? {} : { cpuMs: cpu }),
        status,
        ...(status === 0 ? {} : { failures: failureDetail(output) }),
      });
    });
  });
}

let reapedBefore: number | undefined;

/**
 * CPU ms of this process's reaped children since the last call: Linux counts
 * a child's time, and that of the children it waited for, into its parent's
 * cutime and cstime (/proc/self/stat fields 16 and 17, in clock ticks of
 * 10 ms) once the parent reaps it. Undefined where /proc is not there.
 */
function reapedCpuMs(): number | undefined {
  let now: number;
  try {
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    now = (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
  const before = reapedBefore ?? 0;
  reapedBefore = now;
  return now - before;
}

const DETAIL_LINES = 40;

/**
 * The spec reporter's closing "failing tests" section of a file's output (its
 * last lines when there is none: a crash, a timeout), at most DETAIL_LINES
 * lines, so that a run's end says why next to which. Pure.
 */
export function failureDetail(output: string): string {
  const lines = output.split('\n');
  const at = lines.findLastIndex((l) => /^\s*✖ failing tests:/.test(l));
  if (at < 0)
    return lines
      .filter((l) => l.trim() !== '')
      .slice(-DETAIL_LINES)
      .join('\n');
  const part = lines.slice(at + 1);
  while (part[0]?.trim() === '') part.shift();
  const kept = part.slice(0, DETAIL_LINES);
  const more = part.length - kept.length;
  return [...kept, ...(more > 0 ? [`… ${more} more lines in the file's output above`] : [])].join('\n').trimEnd();
}

function indent(text: string): string {
  return text
    .split('\n')
    .filter((line, i, all) => line !== '' || i < all.length - 1)
    .map((line) => `  ${line}\n`)
    .join('');
}
