/**
 * Starting one queue's buffered runs, in claim order, while the queue runs
 * fewer than its `concurrency`, each on the session placement picks
 * (placement.ts). A run waits in place while its task's options are being read
 * or an older run of its job is still stopping on a thread; runs behind it go
 * past. The dispatcher pumps its queues round robin, one queue further each
 * round, and flushes the sessions once per round.
 */
import type { QueueSettings } from '../../config/index.ts';
import type { Run, RunLedger } from './ledger.ts';
import { place } from './placement.ts';
import type { RunSession } from './run_session.ts';
import type { SessionSet } from './session_set.ts';

/** What a pump reads and changes: the dispatcher's, built once. */
export interface PumpParts {
  ledger: RunLedger;
  sessions: SessionSet;
  queues: Record<string, QueueSettings>;
  maxThreads: number;
  /** Whether the run's task options are known (setting its traits if they have just become so). */
  known(run: Run): boolean;
  /** A new session of the queue. */
  open(queue: string): RunSession;
  start(run: Run, session: RunSession, now: number): void;
}

/** Starts what the queue may start; true when a run waits for a thread. */
export function startBuffered(p: PumpParts, queue: string): boolean {
  const settings = p.queues[queue] as QueueSettings;
  const buffer = p.ledger.buffer(queue);
  if (buffer.length === 0) return false;
  let seen = 0;
  let starved = false;
  const waiting: Run[] = [];
  const now = performance.now();
  while (seen < buffer.length && p.ledger.running(queue) < settings.concurrency) {
    const run = buffer[seen] as Run;
    if (!p.known(run) || p.ledger.isRunning(run.job.id)) {
      waiting.push(run);
      seen++;
      continue;
    }
    const placement = place(p.sessions, {
      queue,
      exclusive: run.exclusive,
      jobsPerThread: settings.jobsPerThread,
      maxThreads: p.maxThreads,
    });
    if (placement.type === 'wait') {
      if (placement.yieldFrom) placement.yieldFrom.yielding = true;
      starved = true;
      break;
    }
    p.start(run, placement.type === 'use' ? placement.session : p.open(queue), now);
    seen++;
  }
  if (seen > 0) buffer.splice(0, seen, ...waiting);
  return starved;
}
