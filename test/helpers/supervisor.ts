/**
 * Supervisors as real child processes (`jobvisor start`), for tests that kill,
 * freeze or signal them. Config goes in through a JOBVISOR_CONFIG file; the
 * metrics port is chosen by the OS and read from the `ready` log line.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIXTURE_TASKS } from './inprocess.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/**
 * The jobvisor command child processes run: the compiled package of this test
 * run (test/run.ts makes it once, test/helpers/compile.ts), as an installed
 * package runs it; the checkout's (sources through tsx, about 1.3 s more per
 * process start) when a file runs without test/run.ts.
 */
export const BIN = process.env.JOBVISOR_TEST_COMPILED
  ? path.join(process.env.JOBVISOR_TEST_COMPILED, 'bin/jobvisor.js')
  : path.join(root, 'bin/jobvisor.js');

export interface SpawnedSupervisor {
  child: ChildProcess;
  pid: number;
  metricsPort: number;
  /** Parsed JSON log lines so far (non-JSON lines as { raw }). */
  logs: Array<Record<string, unknown>>;
  /** Resolves with the first log line (past or future) whose msg matches. */
  waitForLog(
    msg: RegExp,
    timeoutMs?: number,
    where?: (line: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>>;
  /** Sends `signal` (default SIGTERM) and resolves with the exit code (null if killed by a signal). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface SpawnOptions {
  databaseUrl: string;
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  tasksDir?: string;
  args?: string[];
  /** Wait for the `ready` line (default true). */
  waitReady?: boolean;
  readyTimeoutMs?: number;
  /** Its own process group (pid = pgid), so a test can signal the whole group as a terminal or systemd does. */
  detached?: boolean;
}

const alive = new Set<ChildProcess>();
/** Folders of writeConfig: removed when the test process exits (supervisors may still read them until then). */
const configDirs = new Set<string>();
process.on('exit', () => {
  for (const child of alive) child.kill('SIGKILL');
  for (const dir of configDirs) rmSync(dir, { recursive: true, force: true });
});

/** Writes `config` to a fresh temporary file, removed when this process exits. */
export function writeConfig(config: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-test-'));
  configDirs.add(dir);
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

/**
 * Supervisors of one test file, started alike (`options` is read at each start,
 * so it may name a database made later) and all SIGKILLed by kill(), stopped
 * ones first resumed.
 */
export class SupervisorFleet {
  /** Every supervisor started, in order, alive or not. */
  readonly members: SpawnedSupervisor[] = [];

  constructor(private readonly options: () => SpawnOptions) {}

  async start(): Promise<SpawnedSupervisor> {
    const s = await spawnSupervisor(this.options());
    this.members.push(s);
    return s;
  }

  kill(): Promise<void> {
    return killAll(this.members);
  }
}

/** SIGTERM, and the drain ends in exit code 0 (the failure says how it ended and the last lines logged). */
export async function assertDrains(s: SpawnedSupervisor): Promise<void> {
  const code = await s.stop('SIGTERM');
  if (code !== 0)
    assert.fail(
      `supervisor ${s.pid} exited with ${code ?? `signal ${String(s.child.signalCode)}`} after SIGTERM; ` +
        `last lines: ${JSON.stringify(s.logs.slice(-8))}`,
    );
}

/** SIGKILLs every one of `supervisors` still alive, the stopped (SIGSTOP) ones resumed first. */
export async function killAll(supervisors: SpawnedSupervisor[]): Promise<void> {
  await Promise.all(
    supervisors.map((s) => {
      try {
        process.kill(s.pid, 'SIGCONT');
      } catch {
        // already gone
      }
      return s.stop('SIGKILL').catch(() => {});
    }),
  );
}

/**
 * A fleet running the fixture tasks with `config` (and `env`), against the
 * database `url()` names when each starts (it may be made later).
 */
export function fixtureFleet(
  url: () => string,
  config: Record<string, unknown>,
  env?: Record<string, string>,
): SupervisorFleet {
  return new SupervisorFleet(() => ({
    databaseUrl: url(),
    tasksDir: FIXTURE_TASKS,
    config,
    env,
    readyTimeoutMs: 60_000,
  }));
}

export async function spawnSupervisor(options: SpawnOptions): Promise<SpawnedSupervisor> {
  const config = { metrics: { port: 0, host: '127.0.0.1' }, ...options.config };
  const child = spawn(process.execPath, [BIN, 'start', ...(options.args ?? [])], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached === true,
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      JOBVISOR_CONFIG: writeConfig(config),
      JOBVISOR_TASKS_DIR: options.tasksDir ?? '',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info',
      NODE_ENV: 'test',
      ...options.env,
    },
  });
  alive.add(child);
  const logs: Array<Record<string, unknown>> = [];
  const listeners = new Set<(line: Record<string, unknown>) => void>();
  let buffer = '';
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let i: number;
    while ((i = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        line = { raw: text };
      }
      logs.push(line);
      for (const l of listeners) l(line);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      alive.delete(child);
      resolve({ code, signal });
    }),
  );

  const waitForLog = (msg: RegExp, timeoutMs = 15_000, where?: (line: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const match = (line: Record<string, unknown>) =>
        msg.test(typeof line.msg === 'string' ? line.msg : typeof line.raw === 'string' ? line.raw : '') &&
        (!where || where(line));
      const found = logs.find(match);
      if (found) return resolve(found);
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(
          new Error(
            `no log line matching ${msg} within ${timeoutMs} ms; last lines: ${JSON.stringify(logs.slice(-8))}`,
          ),
        );
      }, timeoutMs);
      const listener = (line: Record<string, unknown>) => {
        if (!match(line)) return;
        clearTimeout(timer);
        listeners.delete(listener);
        resolve(line);
      };
      listeners.add(listener);
      void exited.then(({ code, signal }) => {
        if (!listeners.has(listener)) return;
        clearTimeout(timer);
        listeners.delete(listener);
        reject(
          new Error(
            `supervisor exited (code ${code}, signal ${signal}) before logging ${msg}; last lines: ${JSON.stringify(logs.slice(-8))}`,
          ),
        );
      });
    });

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 30_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const { code } = await exited;
    clearTimeout(timer);
    return code;
  };

  let metricsPort = 0;
  if (options.waitReady !== false) {
    try {
      const ready = await waitForLog(/^ready$/, options.readyTimeoutMs ?? 30_000);
      metricsPort = Number(ready.metricsPort);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
  }
  return { child, pid: child.pid as number, metricsPort, logs, waitForLog, stop, exited };
}
