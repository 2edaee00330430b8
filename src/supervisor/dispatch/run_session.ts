/**
 * What the dispatcher uses of a session, and where sessions come from. The
 * real one (session.ts) holds a Piscina worker thread; the dispatcher's unit
 * tests drive a fake one, step by step, without threads.
 */
import type { ClaimedJob } from '../../queue/types.ts';
import type { RunResult, StopReason } from './outcome.ts';
import type { SessionView } from './placement.ts';

/** A batch call's id and the JSON text of its batch key's value (worker/protocol.ts CallMessage). */
export interface CallInfo {
  callId: string;
  key?: string;
}

export interface SessionHandlers {
  /** The thread has booted. */
  ready(session: RunSession): void;
  /** One run has ended on the thread; called for each run of a result batch. */
  result(token: string, result: RunResult): void;
  /** The end of one result batch. */
  resultsEnd(): void;
  /** Progress values (JSON text) of runs still on the thread, throttled there. */
  progress(tokens: string[], values: string[]): void;
  /** The session's thread was given back: `err` is the thread's death, or null. */
  ended(session: RunSession, err: unknown): void;
}

export interface RunSession extends SessionView {
  readonly ready: boolean;
  /** Gives its thread back to another queue: takes no new runs, ends once empty. */
  yielding: boolean;
  /** Claim tokens of the runs on this thread. */
  readonly running: Set<string>;
  /** The job whose stop made the dispatcher terminate this thread. */
  readonly killedToStop: string | null;
  /** Settles when the thread is given back (after `ended`). */
  readonly done: Promise<void>;
  /** Queues a job for the next flush. */
  send(job: ClaimedJob, exclusive: boolean): void;
  /** Sends the queued jobs, as one batch call when `call` is given; returns them (empty when none). */
  flush(call?: CallInfo): ClaimedJob[];
  /** The run has left this thread (its outcome is decided). */
  remove(token: string, exclusive: boolean): void;
  /** Asks the task to stop through ctx.signal. */
  abort(token: string, reason: StopReason): void;
  /** No more jobs: the thread is given back once the running ones settle. */
  end(): void;
  /** Terminates the thread to stop a job that ignores its signal. */
  terminate(jobId: string, reason: StopReason): void;
}

/** Opens sessions, and says how many threads there are (for 'pool:changed'). */
export interface SessionSource {
  open(queue: string, handlers: SessionHandlers): RunSession;
  threads(): number;
  /** Tasks waiting in the thread pool's own queue (zero while the dispatcher keeps sessions ≤ maxThreads). */
  queued(): number;
}
