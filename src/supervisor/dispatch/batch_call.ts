/**
 * One call of a batch task, from the moment its gathering is due to its last
 * job's outcome.
 *
 * States: checking (its start statement is in flight: the jobs' leases are
 * renewed and its id recorded; a job lost meanwhile, cancelled for one, is
 * dropped and never passed) → ready (waits for its queue's places and a
 * thread) → started (on a thread; each job settles on its own). Once every
 * job that started has an outcome, the non-dropped ones leave together, for
 * one write (completer.ts recordCall). Until then the outcomes already in are
 * claims the heartbeat keeps (fences()).
 */
import type { Fence } from '../../queue/types.ts';
import type { CallEntry, Outcome, OutcomeSink } from '../complete/outcome.ts';
import type { Run } from './ledger.ts';

export class BatchCall {
  state: 'checking' | 'ready' | 'started' = 'checking';
  private readonly entries: CallEntry[] = [];
  private left = 0;

  constructor(
    /** The first job's claim token: unique to this call (jobs.batch_id). */
    readonly id: string,
    readonly queue: string,
    readonly kind: string,
    /** The batch key's value (JSON text), if the task has a key. */
    readonly key: string | undefined,
    /** Its jobs, in the order they joined; once started, those that started. */
    public runs: Run[],
    /** When the first of them joined its gathering (performance.now()). */
    readonly since: number,
  ) {}

  /** The runs now on a thread together. */
  started(runs: Run[]): void {
    this.runs = runs;
    this.left = runs.length;
    this.state = 'started';
  }

  /**
   * A started job's outcome. @returns every entry once the last job's is in
   * (dropped jobs, whose lease was lost, are not entries), else undefined.
   */
  collect(run: Run, outcome: Outcome): CallEntry[] | undefined {
    if (outcome.type !== 'drop') this.entries.push({ job: run.job, outcome });
    this.left--;
    return this.left === 0 ? this.entries : undefined;
  }

  /** Claims whose outcome is in and not yet handed on: the heartbeat renews them. */
  fences(): Fence[] {
    return this.entries.map(({ job }) => ({ id: job.id, token: job.token }));
  }

  /** Whether a job of the call other than `run` is still running and not asked to stop. */
  othersGoOn(run: Run, running: (r: Run) => boolean): boolean {
    return this.runs.some((r) => r !== run && !r.stop && running(r));
  }
}

/** A call's outcomes to the completer, for one write (a sink without recordCall takes them one by one). */
export function recordCall(sink: OutcomeSink, entries: CallEntry[]): void {
  if (sink.recordCall) sink.recordCall(entries);
  else for (const { job, outcome } of entries) sink.record(job, outcome);
}
