import type { MessagePort } from 'node:worker_threads';
import type { TaskSources } from './loader.ts';

/**
 * Messages between the supervisor's dispatcher and a worker thread.
 *
 * A *session* is one Piscina task: it holds a thread while jobs of one queue run
 * on it. The dispatcher sends jobs into the session through a MessagePort as
 * they arrive (several at once on queues whose jobs share a thread); the worker
 * answers with results, batched per turn of its event loop, and the session
 * ends when the dispatcher sends `end` and the last job has settled.
 *
 * Batches travel as parallel arrays of primitives, not arrays of objects:
 * structured clone copies them several times faster, and at tens of thousands
 * of jobs per second this is main-thread time taken from PostgreSQL.
 */

export interface JobBatch {
  ids: string[];
  /** Each run's claim token: the key of the run on both sides of the port. */
  tokens: string[];
  kinds: string[];
  /**
   * JSON text, parsed in the thread; null for a payload the claim did not
   * carry (ClaimedJob.payloadDeferred): the thread reads it (payload_read.ts).
   */
  payloads: Array<string | null>;
  attempts: number[];
  maxAttempts: number[];
  /**
   * Each job's trace_context (JSON text), present only when some job has one;
   * sparse: a job without one is a hole (undefined).
   */
  traceContexts?: Array<string | undefined>;
  /**
   * Rate-limited jobs' start windows (ms since the epoch, Date.now()), present
   * only when some job has one; sparse like traceContexts. The thread waits
   * until notBeforeMs and hands back a job it reaches after notAfterMs.
   */
  notBeforeMs?: Array<number | undefined>;
  notAfterMs?: Array<number | undefined>;
  /**
   * A resumed job's durable-step records as JSON text (queue/steps.ts
   * recordsOf), read by the supervisor after the claim, and the database's
   * clock when sent (ms since the epoch); sparse like traceContexts. A job
   * without them reads its own on its first ctx.step, sleep or waitFor.
   */
  steps?: Array<string | undefined>;
  stepsNowMs?: Array<number | undefined>;
}

/**
 * One call of a batch task (worker/batch_run.ts): every job of the batch goes
 * to one `task(jobs, ctx)`, and each comes back as its own result. `callId`
 * names the call (the jobs' batch_id); `key` is the JSON text of the batch
 * key's value the jobs share, when the task has one.
 */
export type CallMessage = { type: 'call'; callId: string; key?: string } & JobBatch;

export type ToWorker =
  | ({ type: 'run' } & JobBatch)
  | CallMessage
  | { type: 'abort'; token: string; reason: 'timeout' | 'lease-lost' | 'shutdown' }
  | { type: 'end' };

export interface TaskError {
  name: string;
  message: string;
  stack?: string;
  permanent: boolean;
  retryInMs: number | null;
  /** Set when the task snoozed (SnoozeError): back to pending after this many ms, no attempt used. */
  snoozeMs?: number;
  /** Set when the task was not started: the thread reached it this many ms past its start window. */
  lateMs?: number;
  /** Set when the run slept or waited (ctx.sleep, ctx.waitFor): the job goes back, no attempt used. */
  park?: Park;
}

/** A sleep or a wait that ended a run (worker/step_errors.ts). */
export interface Park {
  kind: 'sleep' | 'wait';
  name: string;
  /** Wake time or deadline, ms since the epoch; null: `delayMs` from the write (by the database's clock). */
  untilMs: number | null;
  delayMs: number;
}

/** What a run that used ctx.step, sleep or waitFor reports of them (metrics). */
export interface DurableReport {
  /** Steps this run recorded. */
  steps: number;
  /** How long after its wake time (or deadline) the run reached the sleep or wait it resumed from, ms. */
  lateMs?: number;
  /** Waits of this run decided by their signal, and by their timeout. */
  waits?: { signal: number; timeout: number };
}

/** Results of jobs that settled in one turn of the thread's event loop. */
export interface ResultBatch {
  type: 'results';
  /**
   * The runs' claim tokens: a result can never be taken for another run of the
   * same job, even one claimed again by this supervisor after a re-queue.
   */
  tokens: string[];
  /** ms each task ran, measured in the thread. */
  runMs: number[];
  /** Per index: null for success; present only when some job failed. */
  errors?: Array<TaskError | null>;
  /**
   * What a successful run reported, present only when some run did; sparse (a
   * hole: nothing): its return value as JSON text, and its last progress value.
   */
  results?: Array<string | undefined>;
  progress?: Array<string | undefined>;
  /** Sparse: what each run that used durable steps reports of them (success or not). */
  durable?: Array<DurableReport | undefined>;
}

/**
 * Progress values of running jobs (ctx.progress), already throttled in the
 * thread to one per job per second; the supervisor writes them, fenced.
 */
export interface ProgressBatch {
  type: 'progress';
  tokens: string[];
  /** JSON text. */
  values: string[];
}

/**
 * Sent once when the session starts on its thread: jobs sent before it waited for
 * the thread to boot, and their timeouts count from here, not from dispatch.
 */
export interface SessionReady {
  type: 'ready';
}

export type FromWorker = ResultBatch | ProgressBatch | SessionReady;

/**
 * Posted on a thread's parentPort once its module has loaded (Piscina hands it
 * on as the pool's 'message'): supervisor/threads.ts waits for it before it ends
 * the pool.
 */
export interface ThreadLoaded {
  jobvisorThreadLoaded: number;
}

/** What the Piscina task receives: the session's port and queue. */
export interface SessionTask {
  port: MessagePort;
  queue: string;
}

/** Set once per thread through Piscina's workerData. */
export interface WorkerSetup {
  /** The app's tasks (run({ tasks })), tasks.dir, and the built-in tasks enabled: loader.ts's look-up order. */
  tasks: TaskSources;
  databaseUrl: string;
  dbPoolSize: number;
  /** jobs.maxResultBytes: a return value over it fails its attempt. */
  maxResultBytes: number;
  /** jobs.maxSteps: steps, sleeps and waits one job may record. */
  maxSteps: number;
  /** jobs.maxStepResultBytes: a step result over it fails the attempt for good. */
  maxStepResultBytes: number;
  /** jobs.maxPayloadBytes: a deferred payload over it is a dead letter, never run. */
  maxPayloadBytes: number;
  logLevel: string;
  supervisor: string;
  taskConfig: {
    thumbnails: { dir: string; format: string; sourceRoots?: string[] };
    reports: { dir: string };
    schema: string;
  };
}
