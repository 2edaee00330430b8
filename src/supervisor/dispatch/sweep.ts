/**
 * Deadlines of running runs, and the sweep that finds the overdue ones.
 *
 * A run's deadline counts from when its session's thread is ready: a job sent
 * to a thread still booting (a new thread loads the worker and its modules
 * first: seconds from TypeScript sources on a busy machine) has not started.
 * Until the thread says it is ready only a thread that never boots is stopped,
 * THREAD_BOOT_MS after dispatch. One interval timer checks every running run
 * (every `sweepMs`) instead of a timer per job.
 */
import type { Run } from './ledger.ts';

/** A thread that has not booted after this long is treated as hung. */
export const THREAD_BOOT_MS = 60_000;

/** The deadline of a run sent now to a session that is (or is not yet) ready. */
export function deadlineAt(now: number, timeoutMs: number, threadReady: boolean): number {
  return now + (threadReady ? timeoutMs : Math.max(timeoutMs, THREAD_BOOT_MS));
}

/** Running runs past their deadline that have not been asked to stop yet. */
export function overdue(runs: Iterable<Run>, now: number): Run[] {
  const found: Run[] = [];
  for (const r of runs) if (r.state === 'running' && !r.stop && now >= r.deadline) found.push(r);
  return found;
}

export class DeadlineSweep {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly everyMs: number,
    private readonly runs: () => Iterable<Run>,
    private readonly onOverdue: (run: Run) => void,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.runOnce(), this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  runOnce(now = performance.now()): void {
    for (const r of overdue(this.runs(), now)) this.onOverdue(r);
  }
}
