/**
 * What a run cost PostgreSQL, per job: WAL bytes (pg_current_wal_lsn() before
 * and after: the whole server's, so only a server of the benchmark's own
 * gives a clean figure), and CPU time of the server's processes, read from
 * /proc/<pid>/stat when the server runs on this machine (undefined when it
 * does not). `dbCpuMsPerJob` counts the backends connected to the run's
 * database (the supervisor's, the harness's and autovacuum's while there);
 * `serverCpuMsPerJob` counts every process of the server (with the WAL
 * writer and checkpointer, and anything else the server runs meanwhile).
 * Steadier than jobs/s on a loaded machine: it is work done, not time taken.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

/** Linux reports utime and stime in USER_HZ ticks, 100 a second on every architecture Node runs on. */
const TICK_MS = 10;

export interface PerJobCost {
  walBytesPerJob: number;
  dbCpuMsPerJob?: number;
  serverCpuMsPerJob?: number;
}

export async function startPgCost(pool: pg.Pool): Promise<{ stop(jobs: number): Promise<PerJobCost> }> {
  const first = await snapshot(pool);
  return {
    async stop(jobs) {
      const last = await snapshot(pool);
      const walBytesPerJob = Math.round(Number(last.lsn - first.lsn) / jobs);
      if (!last.ticks || !first.ticks) return { walBytesPerJob };
      const spent = (pids: Iterable<number>) => {
        let ticks = 0;
        for (const pid of pids) ticks += (last.ticks?.get(pid) ?? 0) - (first.ticks?.get(pid) ?? 0);
        return Math.max(0, ticks) * TICK_MS;
      };
      const db = new Set([...first.dbPids, ...last.dbPids]);
      return {
        walBytesPerJob,
        dbCpuMsPerJob: round3(spent(db) / jobs),
        serverCpuMsPerJob: round3(spent(last.ticks.keys()) / jobs),
      };
    },
  };
}

async function snapshot(pool: pg.Pool) {
  const { rows } = await pool.query<{ lsn: string; pid: number; pids: number[] }>(
    `SELECT (pg_current_wal_lsn() - '0/0')::text AS lsn, pg_backend_pid() AS pid,
            array(SELECT pid FROM pg_stat_activity WHERE datname = current_database()) AS pids`,
  );
  const row = rows[0] as { lsn: string; pid: number; pids: number[] };
  return { lsn: BigInt(row.lsn.split('.')[0] as string), dbPids: row.pids, ticks: serverTicks(row.pid) };
}

/** CPU ticks of every process of the server that runs backend `pid`, or undefined when it is not local. */
function serverTicks(pid: number): Map<number, number> | undefined {
  const postmaster = stat(pid)?.ppid;
  if (postmaster === undefined) return undefined;
  const ticks = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(Number(name));
    if (s && (s.ppid === postmaster || Number(name) === postmaster)) ticks.set(Number(name), s.ticks);
  }
  return ticks;
}

function stat(pid: number): { ppid: number; ticks: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After "pid (comm) ": state ppid … utime is field 14, stime 15 (1-based), comm may hold spaces.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}
