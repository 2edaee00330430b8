/**
 * The run ledger: every run the dispatcher holds, keyed by its claim token.
 *
 * A run is `buffered` (claimed, in its queue's buffer, waiting for a thread) or
 * `running` (sent to a session). It leaves the ledger exactly once, through
 * forget(), when its outcome is decided; a second forget() of the same run
 * returns false, which is how every outcome stays exactly-once.
 *
 * Invariants:
 *   - runs are keyed by token, never by job id: two runs of one job (a job
 *     cancelled and re-queued while it ran here) are two entries;
 *   - at most one run per job id is `running` (runningById): a newer run waits
 *     in its buffer until the older one has ended;
 *   - running(queue) equals the number of that queue's runs in state `running`.
 */
import type { ClaimedJob, Fence } from '../../queue/types.ts';
import type { ResolvedBatch } from '../../worker/batch_options.ts';
import type { StopReason } from './outcome.ts';
import type { RunSession } from './run_session.ts';

export interface Run {
  job: ClaimedJob;
  state: 'buffered' | 'running';
  /** The task must have a thread to itself (task option exclusiveThread). */
  exclusive: boolean;
  /** The run's timeout: the task's, else the queue's, else jobs.timeout. */
  timeoutMs: number;
  /** Its task's options are known (exclusive and timeoutMs are set): until then it waits. */
  known: boolean;
  /** Its task is a batch task: the run waits for a call of its kind (batch_dispatch.ts), never alone. */
  batch?: ResolvedBatch;
  session?: RunSession;
  startedAt: number;
  deadline: number;
  /** Why the dispatcher asked the run to stop, once it has. */
  stop?: StopReason;
}

/** A run just claimed: buffered, with no deadline yet (traits set by the dispatcher). */
export function newRun(job: ClaimedJob): Run {
  return {
    job,
    state: 'buffered',
    exclusive: false,
    timeoutMs: 0,
    known: false,
    startedAt: 0,
    deadline: Number.POSITIVE_INFINITY,
  };
}

export class RunLedger {
  private readonly byToken = new Map<string, Run>();
  /** The newest run of each job id held here. */
  private readonly latestById = new Map<string, Run>();
  /** The run of each job id that is on a thread right now. */
  private readonly runningById = new Map<string, Run>();
  private readonly buffers = new Map<string, Run[]>();
  private readonly runningCount = new Map<string, number>();

  constructor(queues: readonly string[]) {
    for (const q of queues) {
      this.buffers.set(q, []);
      this.runningCount.set(q, 0);
    }
  }

  get size(): number {
    return this.byToken.size;
  }

  get(token: string): Run | undefined {
    return this.byToken.get(token);
  }

  runs(): IterableIterator<Run> {
    return this.byToken.values();
  }

  /** The newest run held for this job, if any. */
  latestOf(jobId: string): Run | undefined {
    return this.latestById.get(jobId);
  }

  /** An older run of this job is still on a thread. */
  isRunning(jobId: string): boolean {
    return this.runningById.has(jobId);
  }

  /** Takes a new run into its queue's buffer. */
  add(run: Run): void {
    this.byToken.set(run.job.token, run);
    this.latestById.set(run.job.id, run);
    this.buffers.get(run.job.queue)?.push(run);
  }

  /** The queue's buffer, in claim order (pump edits it in place). */
  buffer(queue: string): Run[] {
    return this.buffers.get(queue) ?? [];
  }

  buffered(queue: string): number {
    return this.buffers.get(queue)?.length ?? 0;
  }

  running(queue: string): number {
    return this.runningCount.get(queue) ?? 0;
  }

  /** Marks a run (already taken out of its buffer) as sent to `session`. */
  started(run: Run, session: RunSession): void {
    run.state = 'running';
    run.session = session;
    this.runningById.set(run.job.id, run);
    this.runningCount.set(run.job.queue, this.running(run.job.queue) + 1);
  }

  /** Removes a run; false if it had already left (its outcome was decided). */
  forget(run: Run): boolean {
    const { id, token, queue } = run.job;
    if (this.byToken.get(token) !== run) return false;
    this.byToken.delete(token);
    if (this.latestById.get(id) === run) this.latestById.delete(id);
    if (run.state === 'running') {
      run.session?.remove(token, run.exclusive);
      if (this.runningById.get(id) === run) this.runningById.delete(id);
      this.runningCount.set(queue, this.running(queue) - 1);
    } else {
      const buffer = this.buffers.get(queue);
      const i = buffer?.indexOf(run) ?? -1;
      if (i >= 0) buffer?.splice(i, 1);
    }
    return true;
  }

  /** Every buffered run, taken out of the buffers (shutdown). */
  takeBuffered(queue?: string): Run[] {
    const taken: Run[] = [];
    for (const [name, buffer] of this.buffers)
      if (queue === undefined || name === queue) taken.push(...buffer.splice(0));
    return taken;
  }

  /** The claims held here: the heartbeat renews them. */
  fences(): Fence[] {
    const fences: Fence[] = [];
    for (const r of this.byToken.values()) fences.push({ id: r.job.id, token: r.job.token });
    return fences;
  }
}
