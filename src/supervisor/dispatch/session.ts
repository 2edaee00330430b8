/**
 * A session: one Piscina task holding one worker thread for one queue, and the
 * only place that builds or reads thread protocol messages (worker/protocol.ts).
 *
 * States:
 *   booting   — jobs sent wait for the thread to load;
 *   ready     — the thread said so; timeouts count from here;
 *   yielding  — (optional) gives its thread to another queue: no new jobs, and
 *               the dispatcher ends it once its last job has settled;
 *   ending    — `end` sent: the thread returns once its last job has settled;
 *   ended     — the Piscina task settled, normally or with the thread's death.
 * Jobs sent gather in an outbox and leave as one `run` message per flush; an
 * `end` never overtakes them. `running` holds the claim tokens on the thread;
 * `exclusive` counts those whose task must not share it (see placement.ts).
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import type { ClaimedJob } from '../../queue/types.ts';
import type { FromWorker, JobBatch, ResultBatch, SessionTask, ToWorker } from '../../worker/protocol.ts';
import type { RunResult, StopReason } from './outcome.ts';
import type { CallInfo, RunSession, SessionHandlers, SessionSource } from './run_session.ts';

export class Session implements RunSession {
  ready = false;
  /** Gives its thread back to another queue: takes no new runs, ends once empty. */
  yielding = false;
  ending = false;
  /** Claim tokens of the runs on this thread. */
  readonly running = new Set<string>();
  /** How many of those runs must have the thread to themselves. */
  exclusive = 0;
  /** The job whose stop made the dispatcher terminate this thread. */
  killedToStop: string | null = null;
  readonly done: Promise<void>;
  private readonly port: MessagePort;
  private readonly controller = new AbortController();
  private outbox: JobBatch = emptyBatch();
  /** The jobs of the outbox, in its order (not sent: the 'job:started' report reads them). */
  private outJobs: ClaimedJob[] = [];

  constructor(
    readonly queue: string,
    pool: Piscina,
    handlers: SessionHandlers,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    port1.on('message', (message: FromWorker) => {
      if (message.type === 'ready') {
        this.ready = true;
        handlers.ready(this);
      } else if (message.type === 'progress') {
        handlers.progress(message.tokens, message.values);
      } else {
        readResults(message, handlers);
      }
    });
    const task: SessionTask = { port: port2, queue };
    this.done = (
      pool.run(task, { transferList: [port2] as never, signal: this.controller.signal }) as Promise<void>
    ).then(
      () => this.closed(handlers, null),
      (err: unknown) => this.closed(handlers, err),
    );
  }

  /** Queues a job for the next flush. */
  send(job: ClaimedJob, exclusive: boolean): void {
    this.running.add(job.token);
    if (exclusive) this.exclusive++;
    this.outJobs.push(job);
    const out = this.outbox;
    out.ids.push(job.id);
    out.tokens.push(job.token);
    out.kinds.push(job.kind);
    out.payloads.push(job.payload);
    out.attempts.push(job.attempt);
    out.maxAttempts.push(job.maxAttempts);
    // Sparse: a batch without trace contexts allocates nothing.
    if (job.traceContext !== undefined) (out.traceContexts ??= [])[out.ids.length - 1] = job.traceContext;
    // The records the supervisor read after the claim (claim/claimed_steps.ts), with the
    // database's clock then, advanced to now by this thread's monotonic clock.
    if (job.steps !== undefined) {
      (out.steps ??= [])[out.ids.length - 1] = job.steps.text;
      (out.stepsNowMs ??= [])[out.ids.length - 1] = job.steps.nowMs + (performance.now() - job.steps.at);
    }
    if (job.startWindow !== undefined) {
      (out.notBeforeMs ??= [])[out.ids.length - 1] = job.startWindow.notBeforeMs;
      (out.notAfterMs ??= [])[out.ids.length - 1] = job.startWindow.notAfterMs;
    }
  }

  /** Sends the queued jobs, as one batch call when `call` is given; returns them (empty when none). */
  flush(call?: CallInfo): ClaimedJob[] {
    const jobs = this.outJobs;
    if (jobs.length === 0) return jobs;
    const batch = this.outbox;
    this.outbox = emptyBatch();
    this.outJobs = [];
    this.port.postMessage((call ? { type: 'call', ...call, ...batch } : { type: 'run', ...batch }) satisfies ToWorker);
    if (this.ending) this.port.postMessage({ type: 'end' } satisfies ToWorker);
    return jobs;
  }

  /** The run has left this thread (its outcome is decided). */
  remove(token: string, exclusive: boolean): void {
    if (this.running.delete(token) && exclusive) this.exclusive--;
  }

  /** Asks the task to stop through ctx.signal. */
  abort(token: string, reason: StopReason): void {
    this.port.postMessage({ type: 'abort', token, reason } satisfies ToWorker);
  }

  /**
   * No more jobs: the thread is given back once the running ones settle. Jobs
   * still in the outbox leave first (at the next flush, then `end`): a thread
   * told to end before it saw them would return with them unrun.
   */
  end(): void {
    if (this.ending) return;
    this.ending = true;
    if (this.outbox.tokens.length === 0) this.port.postMessage({ type: 'end' } satisfies ToWorker);
  }

  /** Terminates the thread to stop a job that ignores its signal. */
  terminate(jobId: string, reason: StopReason): void {
    this.killedToStop ??= jobId;
    this.controller.abort(new Error(`job ${jobId} did not stop after ${reason}`));
  }

  private closed(handlers: SessionHandlers, err: unknown): void {
    this.port.close();
    handlers.ended(this, err);
  }
}

/** Sessions on the threads of `pool`. */
export function piscinaSessions(pool: Piscina): SessionSource {
  return {
    open: (queue, handlers) => new Session(queue, pool, handlers),
    threads: () => pool.threads.length,
    queued: () => pool.queueSize,
  };
}

function readResults(batch: ResultBatch, handlers: SessionHandlers): void {
  const { tokens, runMs, errors, results, progress, durable } = batch;
  for (let i = 0; i < tokens.length; i++) {
    const error = errors?.[i] ?? null;
    const ms = runMs[i] as number;
    const result: RunResult = error
      ? { type: 'task-error', runMs: ms, error }
      : results || progress
        ? { type: 'success', runMs: ms, result: results?.[i], progress: progress?.[i] }
        : { type: 'success', runMs: ms };
    const report = durable?.[i];
    if (report) result.durable = report;
    handlers.result(tokens[i] as string, result);
  }
  handlers.resultsEnd();
}

function emptyBatch(): JobBatch {
  return { ids: [], tokens: [], kinds: [], payloads: [], attempts: [], maxAttempts: [] };
}
