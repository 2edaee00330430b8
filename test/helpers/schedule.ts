/**
 * Runs test files for test/run.ts: each file in its own `node --test` process,
 * so its wall-clock time is known, the slowest of the last run first (the tail
 * of a run is then short files, not one long one started last; files never
 * timed go first, by tier), and the files that must run alone one at a time
 * after the rest. A file's output is printed whole when it ends, so files
 * running side by side do not interleave.
 *
 * How many run at once: `concurrency` always, and up to `maxConcurrency` while
 * the machine's CPUs sit idle (cpu_idle.ts). Many files spend most of their
 * time waiting (a lease to expire, a PostgreSQL to restart, a child to drain):
 * at a fixed two on two cores, a whole run used 57 % of the CPUs. An extra
 * file starts only when a fifth or more of every core was idle over the last
 * IDLE_WINDOW_MS and no file started within RAMP_MS (a new file's own start-up
 * must show first). Files of one group (`group`) never run side by side.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { watchCpuIdle } from './cpu_idle.ts';

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
  /** How many may run at once while the CPUs sit idle (at least `concurrency`). */
  maxConcurrency: number;
  /** For a name of `files` that is not a file of its own: the file, binary and environment to run. */
  launch?: (name: string) => { file: string; node: string; env: NodeJS.ProcessEnv } | undefined;
  /** The compiled copy of a test file to run on plain node; undefined: run the file under tsx. */
  mirror?: (file: string) => string | undefined;
  /** Files that run with nothing beside them (timing tests). */
  alone: (file: string) => boolean;
  /** Files of one group never run side by side (undefined: no group). */
  group: (file: string) => string | undefined;
  /** Milliseconds each file took last time, to start the slowest first; unknown files first. */
  expected: Record<string, number>;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Where each file's output goes when it ends (stdout by default). */
  write?: (text: string) => void;
}

/** The idle share of every core, over IDLE_WINDOW_MS, at or above which one more file starts. */
export const IDLE_TO_ADD = 0.2;
const IDLE_WINDOW_MS = 3000;
/** No extra file starts within this long of the last start. */
export const RAMP_MS = 3000;
/** How often the scheduler looks at the CPUs between files' ends. */
const TICK_MS = 500;

export interface SchedulerState {
  running: string[];
  /** In the order they should start. */
  waiting: string[];
  concurrency: number;
  maxConcurrency: number;
  group: (file: string) => string | undefined;
  /** The CPUs' idle share over the last window (undefined: not known). */
  idle: number | undefined;
  sinceLastStartMs: number;
}

/** The next file to start now, or undefined. Pure. */
export function nextFile(s: SchedulerState): string | undefined {
  if (s.running.length >= s.maxConcurrency) return undefined;
  const busy = new Set(s.running.map(s.group).filter((g) => g !== undefined));
  const file = s.waiting.find((f) => {
    const g = s.group(f);
    return g === undefined || !busy.has(g);
  });
  if (file === undefined || s.running.length < s.concurrency) return file;
  const spare = s.idle !== undefined && s.idle >= IDLE_TO_ADD && s.sinceLastStartMs >= RAMP_MS;
  return spare ? file : undefined;
}

/**
 * Runs the files and returns one FileRun per file, in the order they ended,
 * and the most files that ran at once.
 */
export async function runFiles(opts: ScheduleOptions): Promise<{ runs: FileRun[]; peak: number }> {
  const byCost = (a: string, b: string): number =>
    (opts.expected[b] ?? Infinity) - (opts.expected[a] ?? Infinity) || tierRank(a) - tierRank(b) || a.localeCompare(b);
  const waiting = opts.files.filter((f) => !opts.alone(f)).sort(byCost);
  const alone = opts.files.filter((f) => opts.alone(f)).sort(byCost);
  const runs: FileRun[] = [];
  reapedCpuMs(); // what ran before (the type-check, lint) is not a file's
  const concurrency = Math.max(1, opts.concurrency);
  const maxConcurrency = Math.max(concurrency, opts.maxConcurrency);
  const cpu = maxConcurrency > concurrency ? watchCpuIdle() : undefined;
  const running = new Set<string>();
  let lastStartMs = -Infinity;
  let peak = 0;
  await new Promise<void>((done) => {
    const fill = (): void => {
      for (;;) {
        const file = nextFile({
          running: [...running],
          waiting,
          concurrency,
          maxConcurrency,
          group: opts.group,
          idle: cpu?.idleOver(IDLE_WINDOW_MS),
          sinceLastStartMs: performance.now() - lastStartMs,
        });
        if (file === undefined) break;
        waiting.splice(waiting.indexOf(file), 1);
        running.add(file);
        peak = Math.max(peak, running.size);
        lastStartMs = performance.now();
        void runFile(opts, file).then((run) => {
          runs.push(run);
          running.delete(file);
          if (waiting.length === 0 && running.size === 0) {
            clearInterval(tick);
            done();
          } else fill();
        });
      }
    };
    const tick = setInterval(fill, TICK_MS);
    if (waiting.length === 0) {
      clearInterval(tick);
      done();
    } else fill();
  });
  cpu?.stop();
  for (const file of alone) runs.push(await runFile(opts, file));
  return { runs, peak: Math.max(peak, alone.length > 0 ? 1 : 0) };
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

/**
 * A file's time limit: 10 min, more for the files whose load is their point.
 * Past it the file's process group (the file and what it spawned) is killed
 * and the file fails, saying so. JOBVISOR_TEST_FILE_TIMEOUT_MS sets one limit for every file.
 */
const DEFAULT_TIMEOUT_MS = 600_000;
const TIMEOUT_MS: Record<string, number> = {
  // 1,200 jobs of 900 KB through two supervisors: 618 s measured at load average 30 (RELIABILITY.md, 35).
  'chaos_big_payloads.test.ts': 900_000,
};

/**
 * Runs one file as `node FILE.js`, its compiled copy (test/helpers/test_mirror.ts),
 * or as `node --import tsx FILE` when it has none: node:test runs a file's tests
 * in the process that imports it, and reports with the reporter named. Not
 * under `node --test`, whose runner would be a second process for every file.
 */
function runFile(opts: ScheduleOptions, name: string): Promise<FileRun> {
  stopGroupsOnSignal();
  const started = performance.now();
  const { file, node, env } = opts.launch?.(name) ?? { file: name, node: opts.node, env: opts.env };
  const timeout = Number(env.JOBVISOR_TEST_FILE_TIMEOUT_MS) || (TIMEOUT_MS[path.basename(file)] ?? DEFAULT_TIMEOUT_MS);
  // The compiled copy on plain node (test/helpers/test_mirror.ts), else the file under tsx.
  const compiled = opts.mirror?.(file);
  const args = compiled
    ? ['--enable-source-maps', '--test-reporter=spec', compiled]
    : ['--import', 'tsx', '--test-reporter=spec', file];
  const child = spawn(node, args, {
    cwd: opts.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  groups.add(child.pid as number);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // already gone
    }
  }, timeout);
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => chunks.push(c));
  return new Promise<FileRun>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      groups.delete(child.pid as number);
      const ms = Math.round(performance.now() - started);
      const status = timedOut ? 1 : (code ?? (signal ? 1 : 0));
      const head = `${status === 0 ? '✔' : '✖'} ${name} (${(ms / 1000).toFixed(1)} s)\n`;
      const output =
        Buffer.concat(chunks).toString() +
        (timedOut ? `\n✖ ${name} ran past its limit of ${timeout / 1000} s: killed with what it started\n` : '');
      (opts.write ?? ((t: string) => process.stdout.write(t)))(head + indent(output));
      const cpu = reapedCpuMs();
      resolve({
        file: name,
        ms,
        ...(cpu === undefined ? {} : { cpuMs: cpu }),
        status,
        ...(status === 0 ? {} : { failures: failureDetail(output) }),
      });
    });
  });
}

/** The process groups of the files running now. */
const groups = new Set<number>();
let stopping = false;

/**
 * A file's process leads a group of its own (so that a timeout kills what it
 * spawned too), which a Ctrl-C at the terminal no longer reaches: the runner
 * passes SIGINT and SIGTERM on to every running file's group, then exits.
 */
function stopGroupsOnSignal(): void {
  if (stopping) return;
  stopping = true;
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      for (const pid of groups)
        try {
          process.kill(-pid, sig);
        } catch {
          // already gone
        }
      process.exit(130);
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
