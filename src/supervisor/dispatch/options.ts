/** What the dispatcher is built with, and how a run takes its task's traits. */
import type { QueueSettings } from '../../config/index.ts';
import type { ClaimedJob, Fence } from '../../queue/types.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';
import type { Run } from './ledger.ts';
import type { OutcomeSink } from '../complete/outcome.ts';
import type { SessionSource } from './run_session.ts';
import type { ResolvedBatch } from '../../worker/batch_options.ts';

/**
 * A batch call's start statement (queue/batch_call.ts): renews its jobs' leases
 * and records the call's id; resolves the tokens of `fences` still held, or
 * null when that is not known (the database is away: the call starts anyway).
 */
export type StartCall = (callId: string, fences: Fence[]) => Promise<Set<string> | null>;

/** What the dispatcher needs to know about a task before it places a job of it. */
export interface TaskTraits {
  /** Never share a thread with another job. */
  exclusiveThread: boolean;
  /** The job's timeout, over the queue's and jobs.timeout. */
  timeoutMs?: number;
  /** A batch task: its jobs run in calls of many (a call has its thread to itself). */
  batch?: ResolvedBatch;
}

export interface DispatcherOptions {
  /** Where sessions come from: worker threads (session.ts piscinaSessions), or a test's fakes. */
  sessions: SessionSource;
  queues: Record<string, QueueSettings>;
  maxThreads: number;
  timeoutMs: number;
  abortGraceMs: number;
  events: SupervisorEvents;
  /** Its `lostRunsEnded` is called for each dropped run (none: a test's dispatcher alone). */
  hooks?: Pick<Hooks, 'lostRunsEnded'>;
  outcomes: OutcomeSink;
  /** Called when a queue has room for more jobs. */
  onCapacity: (queue: string) => void;
  /** Where a running job's progress values (JSON text) go: the progress writer. */
  progress?: (job: ClaimedJob, json: string) => void;
  /** jobs.maxPayloadBytes, named in the error of a job whose payload is over it. */
  maxPayloadBytes: number;
  /** How often running jobs are checked against their timeout (default: 250 ms). */
  sweepMs?: number;
  /**
   * A kind's task options (see worker/task_options.ts): null when it declares
   * none, undefined while not known yet. Runs of an unknown kind wait (others
   * go past them) until kindKnown() is called for it.
   */
  traits: (kind: string) => TaskTraits | null | undefined;
  /** A batch call's start statement (queue/batch_call.ts); absent: calls start without it. */
  startCall?: StartCall;
}

/** Sets the run's traits from its task's options, if they are known; false while they are not. */
export function applyTraits(run: Run, o: Pick<DispatcherOptions, 'traits' | 'queues' | 'timeoutMs'>): boolean {
  const traits = o.traits(run.job.kind);
  if (traits === undefined) return false;
  run.known = true;
  run.exclusive = traits?.exclusiveThread ?? false;
  if (traits?.batch) {
    run.batch = traits.batch;
    run.exclusive = true;
  }
  run.timeoutMs = traits?.timeoutMs ?? o.queues[run.job.queue]?.timeout ?? o.timeoutMs;
  return true;
}
