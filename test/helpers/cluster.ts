/**
 * `jobvisor start --processes N` as a real child process: the primary, its
 * metrics port (from the `cluster ready` line) and its supervisor processes
 * (from the `supervisor process started` lines). Every supervisor process
 * seen is SIGKILLed when the test process exits, should a test fail before
 * the primary stopped them.
 */
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { FIXTURE_TASKS } from './inprocess.ts';
import { spawnSupervisor, type SpawnOptions, type SpawnedSupervisor } from './supervisor.ts';

export interface SpawnedCluster extends SpawnedSupervisor {
  /** Supervisor process pids by slot, in the order they started. */
  childPids(slot?: number): number[];
}

const seen = new Set<number>();
process.on('exit', () => {
  for (const pid of seen)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
});

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The primary and its processes; with `waitReady: false` it resolves at once (metricsPort NaN). */
export async function spawnCluster(processes: number, options: SpawnOptions): Promise<SpawnedCluster> {
  const s = await spawnSupervisor({
    ...options,
    args: ['--processes', String(processes), ...(options.args ?? [])],
    waitReady: false,
  });
  const ready =
    options.waitReady === false
      ? {}
      : await s.waitForLog(/^cluster ready$/, options.readyTimeoutMs ?? 90_000).catch((err: unknown) => {
          s.child.kill('SIGKILL');
          throw err;
        });
  const childPids = (slot?: number) =>
    s.logs
      .filter((l) => l.msg === 'supervisor process started' && (slot === undefined || l.child === slot))
      .map((l) => Number(l.childPid));
  for (const pid of childPids()) seen.add(pid);
  s.child.stdout?.on('data', () => {
    for (const pid of childPids()) seen.add(pid);
  });
  return { ...s, metricsPort: Number(ready.metricsPort), childPids };
}

/** Sums a metric's samples in a Prometheus text answer (optionally only those whose labels match). */
export function metricSum(text: string, name: string, labels: RegExp = /.*/): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name && labels.test(m[2] ?? '')) sum += Number(m[3]);
  }
  return sum;
}

/**
 * A fresh test database with the `executions` table the `record` fixtures write
 * (one row per run), and `jobvisor start --processes 2` on it with the fixture
 * tasks and `config`.
 */
export async function clusterWithExecutions(
  name: string,
  config: Record<string, unknown>,
): Promise<{ db: TestDatabase; cluster: SpawnedCluster }> {
  const db = await createTestDatabase(name);
  await db.pool.query(
    'CREATE TABLE executions (job_id bigint, attempt int, pid int, finished boolean DEFAULT false, at timestamptz DEFAULT clock_timestamp())',
  );
  const cluster = await spawnCluster(2, { databaseUrl: db.url, tasksDir: FIXTURE_TASKS, config });
  return { db, cluster };
}

/** Stops the cluster with SIGTERM, checks every supervisor process it started is gone, drops the database. */
export async function stopCluster(cluster: SpawnedCluster, db: TestDatabase): Promise<void> {
  const pids = cluster.childPids();
  await cluster.stop('SIGTERM');
  for (const pid of pids) assert.equal(isAlive(pid), false, `supervisor process ${pid} is gone`);
  await db.drop();
}
