/**
 * The last resort of a shutdown: a process whose worker threads will not die.
 *
 * `process.exit()` waits for every worker thread to stop, and a thread blocked
 * in a synchronous call stops only when the call returns (see thread_watch.ts).
 * Two steps, in order:
 *   1. kill our child processes: a thread waiting in `execSync`/`spawnSync`
 *      wakes up when its child dies, and then terminates normally;
 *   2. SIGKILL ourselves, which no thread can delay. As PID 1 of a container
 *      the kernel ignores that signal from inside, so if we are still alive a
 *      moment later, abort() (SIGABRT, then a fault the kernel always delivers).
 *      Run under an init (`tini`, `docker run --init`) to keep the exit clean.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** SIGKILLs every descendant process of this process (Linux; elsewhere none); returns their pids. */
export function killChildProcesses(): number[] {
  const found: number[] = [];
  const pending = childrenOf('self');
  while (pending.length > 0) {
    const pid = pending.pop() as number;
    if (found.includes(pid)) continue;
    found.push(pid);
    // Grandchildren first: `execSync` runs `sh -c`, whose child would outlive it.
    pending.push(...childrenOf(String(pid)));
  }
  const killed: number[] = [];
  for (const pid of found) {
    try {
      process.kill(pid, 'SIGKILL');
      killed.push(pid);
    } catch {
      // Already gone.
    }
  }
  return killed;
}

/** Children of a process, from /proc/<pid>/task/<tid>/children (empty when unavailable). */
function childrenOf(pid: string): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
      for (const child of text.split(/\s+/)) if (child) out.push(Number(child));
    } catch {
      // The thread or process has gone.
    }
  }
  return out;
}

/** Ends the process now, whatever its threads do. Write logs synchronously before calling. */
export function exitHard(): void {
  process.kill(process.pid, 'SIGKILL');
  // Still here: PID 1, which ignores its own SIGKILL.
  setTimeout(() => process.abort(), 200);
}
