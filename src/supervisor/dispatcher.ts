/**
 * The dispatcher: claimed jobs in, outcomes out.
 *
 * Each claimed job is tracked from claim to outcome in one of two states:
 *   buffered — claimed, waiting for a thread (handed back at once on shutdown);
 *   running  — sent to a session on a worker thread; its timeout runs.
 * An outcome (done, failed, release, drop) is decided exactly once, after the
 * thread has really stopped the job, and then the job leaves the dispatcher.
 *
 * Runs are keyed by their claim token, never by job id: a job cancelled and
 * re-queued while it runs here can be claimed again by this supervisor, and
 * the two runs must never be confused. The newer run waits in its buffer
 * until the older one (stopped: its lease is lost) has really ended, so one
 * job never runs twice at once in one supervisor.
 *
 * A session (see worker/protocol.ts) holds one thread for one queue. Queues with
 * `jobsPerThread` > 1 run that many jobs at once on a session; `concurrency`
 * bounds a queue's running jobs; sessions never exceed `maxThreads`, so Piscina
 * never queues work and "started" means a thread really took the job.
 *
 * Stopping a job (timeout, lost lease, shutdown) asks the task through
 * ctx.signal first; a job still running `abortGraceMs` later has its thread
 * terminated (that is the only way to stop `for(;;){}`), and the other jobs on
 * that thread are handed back without using an attempt. Timeouts are found by
 * a sweep over running jobs (every `sweepMs`) rather than a timer per job, and
 * count from when the session's thread is ready (see onReady).
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import type { QueueSettings } from '../config.ts';
import type { ClaimedJob, Fence } from '../queue/types.ts';
import type { FromWorker, JobBatch, ResultBatch, SessionTask, ToWorker } from '../worker/protocol.ts';
import type { JobRef, SupervisorEvents } from './events.ts';

type StopReason = 'timeout' | 'lease-lost' | 'shutdown';

/** A thread that has not booted after this long is treated as hung. */
const THREAD_BOOT_MS = 60_000;

/** A failed run, as the completer records it. */
export interface Failure {
  runMs: number;
  error: string;
  /** Dead-letter now, whatever attempts remain. */
  permanent: boolean;
  /** Retry after this long instead of the configured backoff (null: backoff). */
  retryInMs: number | null;
}

/**
 * Where outcomes go: the completer. Each run gets at most one call; a run whose
 * lease was lost gets none (nothing may be written for it).
 */
export interface OutcomeSink {
  done(job: ClaimedJob, runMs: number): void;
  failed(job: ClaimedJob, failure: Failure): void;
  release(job: ClaimedJob, reason: string): void;
}

interface Tracked {
  job: ClaimedJob;
  state: 'buffered' | 'running';
  session?: Session;
  startedAt: number;
  deadline: number;
  stop?: StopReason;
}

interface Session {
  queue: string;
  port: MessagePort;
  controller: AbortController;
  running: Set<string>;
  outbox: JobBatch;
  ending: boolean;
  /** The thread has booted and said so (onReady). */
  ready: boolean;
  killedBy?: Tracked;
}

export interface DispatcherOptions {
  pool: Piscina;
  queues: Record<string, QueueSettings>;
  maxThreads: number;
  timeoutMs: number;
  abortGraceMs: number;
  events: SupervisorEvents;
  outcomes: OutcomeSink;
  /** Called when a queue has room for more jobs. */
  onCapacity: (queue: string) => void;
  /** jobs.maxPayloadBytes, named in the error of a job whose payload is over it. */
  maxPayloadBytes: number;
  /** How often running jobs are checked against their timeout (default: 250 ms). */
  sweepMs?: number;
}

export class Dispatcher {
  /** Every run held here, by claim token. */
  private readonly tracked = new Map<string, Tracked>();
  /** The run of each job id that is on a thread right now. */
  private readonly runningById = new Map<string, Tracked>();
  private readonly buffers = new Map<string, Tracked[]>();
  private readonly runningCount = new Map<string, number>();
  private readonly sessions = new Set<Session>();
  private readonly sessionsDone = new Set<Promise<void>>();
  private closing = false;
  private idleWaiters: Array<() => void> = [];
  private nextQueue = 0;
  private batching = false;
  private readonly freed = new Set<string>();
  private readonly queueNames: string[];
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: DispatcherOptions) {
    this.queueNames = Object.keys(options.queues);
    for (const q of this.queueNames) {
      this.buffers.set(q, []);
      this.runningCount.set(q, 0);
    }
    this.sweeper = setInterval(() => this.sweep(), options.sweepMs ?? 250);
    this.sweeper.unref();
  }

  /** Free places of a queue: concurrency + prefetch minus what it holds. */
  capacity(queue: string): number {
    const q = this.options.queues[queue];
    if (!q || this.closing) return 0;
    return q.concurrency + q.prefetch - (this.buffers.get(queue)?.length ?? 0) - (this.runningCount.get(queue) ?? 0);
  }

  /** The claims held here: the heartbeat renews them. */
  fences(): Fence[] {
    const fences: Fence[] = [];
    for (const t of this.tracked.values()) fences.push({ id: t.job.id, token: t.job.token });
    return fences;
  }

  get size(): number {
    return this.tracked.size;
  }

  inFlight(queue: string): number {
    return (this.buffers.get(queue)?.length ?? 0) + (this.runningCount.get(queue) ?? 0);
  }

  threadsBusy(): number {
    let busy = 0;
    for (const s of this.sessions) if (s.running.size > 0) busy++;
    return busy;
  }

  /** Takes newly claimed jobs. */
  add(jobs: ClaimedJob[]): void {
    for (const job of jobs) {
      if (job.payload === null) {
        // Over the size limit (a plain-SQL insert can write one): never sent to a
        // thread, dead-lettered on its own. Its neighbours run as usual.
        this.options.outcomes.failed(job, {
          runMs: 0,
          error: `PayloadTooLarge: the payload is ${job.payloadBytes} bytes of JSON, over jobs.maxPayloadBytes (${this.options.maxPayloadBytes})`,
          permanent: true,
          retryInMs: null,
        });
        continue;
      }
      // Claimed again while an older run of the job is held here: that run's
      // lease was lost (reaped while this process was paused, or the job was
      // cancelled and re-queued). Stop it; its writes are fenced off anyway.
      // The new run waits in the buffer until the old one has ended (pump).
      for (const stale of this.tracked.values()) {
        if (stale.job.id !== job.id) continue;
        if (stale.state === 'running') this.stopJob(stale, 'lease-lost');
        else this.settle(stale, 'drop');
      }
      const t: Tracked = { job, state: 'buffered', startedAt: 0, deadline: Number.POSITIVE_INFINITY };
      this.tracked.set(job.token, t);
      this.buffers.get(job.queue)?.push(t);
    }
    this.pump();
  }

  /**
   * The heartbeat found these leases gone: stop the runs, write nothing for them.
   * Each is reported once, as 'lease:lost', when the run has ended.
   */
  leaseLost(tokens: string[]): void {
    for (const token of tokens) {
      const t = this.tracked.get(token);
      if (!t) continue;
      if (t.state === 'buffered') this.settle(t, 'drop');
      else this.stopJob(t, 'lease-lost');
    }
  }

  /** Shutdown, step 1: no more dispatching; buffered jobs are handed back now. */
  drainBuffers(): void {
    this.closing = true;
    for (const buffer of this.buffers.values()) {
      for (const t of buffer.splice(0)) this.settle(t, 'release', 'shutdown before start');
    }
    this.endIdleSessions(true);
  }

  /** Resolves when no job is running (or at once). */
  whenIdle(): Promise<void> {
    if (this.tracked.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Shutdown, step 2 (grace over): abort every running job; they are handed back. */
  abortAll(): void {
    for (const t of [...this.tracked.values()]) {
      if (t.state === 'running') this.stopJob(t, 'shutdown');
      else this.settle(t, 'release', 'shutdown before start');
    }
  }

  /** Ends every session and waits for the threads to be given back. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    this.endIdleSessions(true);
    await Promise.allSettled([...this.sessionsDone]);
  }

  private pump(): void {
    if (this.closing) return;
    const names = this.queueNames;
    let starved = false;
    for (let i = 0; i < names.length; i++) {
      const queue = names[(this.nextQueue + i) % names.length] as string;
      const settings = this.options.queues[queue] as QueueSettings;
      const buffer = this.buffers.get(queue) as Tracked[];
      if (buffer.length === 0) continue;
      let taken = 0;
      let seen = 0;
      const waiting: Tracked[] = [];
      const running = this.runningCount.get(queue) as number;
      const timeoutMs = settings.timeout ?? this.options.timeoutMs;
      const now = performance.now();
      while (seen < buffer.length && running + taken < settings.concurrency) {
        const t = buffer[seen] as Tracked;
        if (this.runningById.has(t.job.id)) {
          // An older run of this job is still stopping on a thread.
          waiting.push(t);
          seen++;
          continue;
        }
        const session = this.sessionFor(queue, settings);
        if (!session) {
          starved = true;
          break;
        }
        this.start(t, session, now, timeoutMs);
        seen++;
        taken++;
      }
      if (seen > 0) buffer.splice(0, seen, ...waiting);
      if (taken > 0) this.runningCount.set(queue, running + taken);
    }
    this.nextQueue = (this.nextQueue + 1) % Math.max(1, names.length);
    for (const s of this.sessions) this.flush(s);
    this.endIdleSessions(starved);
  }

  private sessionFor(queue: string, settings: QueueSettings): Session | undefined {
    for (const s of this.sessions) {
      if (s.queue === queue && !s.ending && s.running.size < settings.jobsPerThread) return s;
    }
    if (this.sessions.size >= this.options.maxThreads) return undefined;
    return this.open(queue);
  }

  private open(queue: string): Session {
    const { port1, port2 } = new MessageChannel();
    const session: Session = {
      queue,
      port: port1,
      controller: new AbortController(),
      running: new Set(),
      outbox: emptyBatch(),
      ending: false,
      ready: false,
    };
    this.sessions.add(session);
    port1.on('message', (message: FromWorker) =>
      message.type === 'ready' ? this.onReady(session) : this.onResults(message),
    );
    const task: SessionTask = { port: port2, queue };
    const done = (
      this.options.pool.run(task, {
        transferList: [port2] as never,
        signal: session.controller.signal,
      }) as Promise<void>
    ).then(
      () => this.sessionEnded(session, null),
      (err: unknown) => this.sessionEnded(session, err),
    );
    this.sessionsDone.add(done);
    void done.finally(() => this.sessionsDone.delete(done));
    this.emitPool();
    return session;
  }

  private start(t: Tracked, session: Session, now: number, timeoutMs: number): void {
    const job = t.job;
    t.state = 'running';
    t.session = session;
    t.startedAt = now;
    // On a thread still booting the job has not started: its timeout counts from
    // onReady. Until then only a thread that never boots is stopped.
    t.deadline = now + (session.ready ? timeoutMs : Math.max(timeoutMs, THREAD_BOOT_MS));
    session.running.add(job.token);
    this.runningById.set(job.id, t);
    const out = session.outbox;
    out.ids.push(job.id);
    out.tokens.push(job.token);
    out.kinds.push(job.kind);
    out.payloads.push(job.payload as string);
    out.attempts.push(job.attempt);
    out.maxAttempts.push(job.maxAttempts);
    if (job.traceContext !== undefined) (out.traceContexts ??= [])[out.ids.length - 1] = job.traceContext;
  }

  private flush(session: Session): void {
    const batch = session.outbox;
    if (batch.ids.length === 0) return;
    session.outbox = emptyBatch();
    session.port.postMessage({ type: 'run', ...batch } satisfies ToWorker);
    if (this.options.events.listenerCount('job:started') === 0) return;
    const now = Date.now();
    const refs: JobRef[] = [];
    const waits: number[] = [];
    for (const token of batch.tokens) {
      const job = this.tracked.get(token)?.job;
      if (!job) continue;
      refs.push(job);
      waits.push(now - job.runAtMs);
    }
    this.options.events.emit('job:started', { jobs: refs, waitMs: waits });
  }

  /** Finds running jobs past their deadline. */
  private sweep(): void {
    const now = performance.now();
    for (const t of this.tracked.values()) {
      if (t.state === 'running' && !t.stop && now >= t.deadline) {
        this.options.events.emit('job:timeout', { job: t.job, timeoutMs: this.timeoutOf(t) });
        this.stopJob(t, 'timeout');
      }
    }
  }

  private stopJob(t: Tracked, reason: StopReason): void {
    if (t.stop || t.state !== 'running' || !t.session) return;
    t.stop = reason;
    const session = t.session;
    session.port.postMessage({ type: 'abort', token: t.job.token, reason } satisfies ToWorker);
    // A job that ignores its signal (a CPU loop never sees it) loses its thread.
    const grace = setTimeout(() => {
      if (this.tracked.get(t.job.token) === t) {
        session.killedBy ??= t;
        session.controller.abort(new Error(`job ${t.job.id} did not stop after ${reason}`));
      }
    }, this.options.abortGraceMs);
    grace.unref();
  }

  /**
   * The session's thread has booted (a new thread loads the worker and its
   * modules first: seconds from TypeScript sources on a busy machine). Jobs sent
   * meanwhile had not started: their timeouts count from now. A thread that never
   * boots times its jobs out THREAD_BOOT_MS after dispatch.
   */
  private onReady(session: Session): void {
    session.ready = true;
    const now = performance.now();
    for (const token of session.running) {
      const t = this.tracked.get(token);
      if (t && t.session === session && !t.stop) {
        t.startedAt = now;
        t.deadline = now + this.timeoutOf(t);
      }
    }
  }

  private onResults(batch: ResultBatch): void {
    const { tokens, runMs, errors } = batch;
    this.batching = true;
    for (let i = 0; i < tokens.length; i++) {
      const t = this.tracked.get(tokens[i] as string);
      if (!t || t.state !== 'running') continue;
      const error = errors?.[i] ?? null;
      const ms = runMs[i] as number;
      if (t.stop === 'lease-lost') this.settle(t, 'drop');
      else if (!error) this.settle(t, 'done', undefined, ms);
      else if (t.stop === 'shutdown') this.settle(t, 'release', 'aborted by shutdown');
      else if (t.stop === 'timeout')
        this.settleFailed(t, {
          runMs: ms,
          error: `TimeoutError: job timed out after ${this.timeoutOf(t)} ms`,
          permanent: false,
          retryInMs: null,
        });
      else
        this.settleFailed(t, {
          runMs: ms,
          error: `${error.name}: ${error.message}`,
          permanent: error.permanent,
          retryInMs: error.retryInMs,
        });
    }
    this.batching = false;
    this.capacityFreed();
    this.pump();
  }

  /** Tells fetchers of the queues that gave back places (once per batch, not per job). */
  private capacityFreed(): void {
    if (this.closing) {
      this.freed.clear();
      return;
    }
    for (const queue of this.freed) this.options.onCapacity(queue);
    this.freed.clear();
  }

  private sessionEnded(session: Session, err: unknown): void {
    this.sessions.delete(session);
    session.port.close();
    const victims = [...session.running]
      .map((token) => this.tracked.get(token))
      .filter((t): t is Tracked => t !== undefined && t.session === session);
    if (victims.length > 0) {
      const killer = session.killedBy;
      const cause = err instanceof Error ? err.message : String(err ?? 'session ended early');
      if (!killer) this.options.events.emit('thread:died', { jobs: victims.map((t) => t.job), error: cause });
      for (const t of victims) {
        const runMs = performance.now() - t.startedAt;
        if (t.stop === 'lease-lost') this.settle(t, 'drop');
        else if (t.stop === 'shutdown') this.settle(t, 'release', 'aborted by shutdown');
        else if (t.stop === 'timeout') {
          this.settleFailed(t, {
            runMs,
            error: `TimeoutError: job timed out after ${this.timeoutOf(t)} ms and did not stop; its worker thread was terminated`,
            permanent: false,
            retryInMs: null,
          });
        } else if (killer) this.settle(t, 'release', `thread terminated to stop job ${killer.job.id}`);
        else this.settleFailed(t, { runMs, error: describeThreadDeath(err), permanent: false, retryInMs: null });
      }
    }
    this.emitPool();
    this.pump();
  }

  private timeoutOf(t: Tracked): number {
    return this.options.queues[t.job.queue]?.timeout ?? this.options.timeoutMs;
  }

  private settleFailed(t: Tracked, failure: Failure): void {
    if (!this.forget(t)) return;
    this.options.outcomes.failed(t.job, failure);
    this.afterSettle(t);
  }

  private settle(t: Tracked, outcome: 'done' | 'release' | 'drop', reason = '', runMs = 0): void {
    if (!this.forget(t)) return;
    if (outcome === 'done') this.options.outcomes.done(t.job, runMs);
    else if (outcome === 'release') this.options.outcomes.release(t.job, reason);
    else this.options.events.emit('lease:lost', { jobs: [t.job] });
    this.afterSettle(t);
  }

  /** Removes a run from the dispatcher; false if its outcome was already decided. */
  private forget(t: Tracked): boolean {
    if (this.tracked.get(t.job.token) !== t) return false;
    this.tracked.delete(t.job.token);
    const queue = t.job.queue;
    if (t.state === 'running') {
      t.session?.running.delete(t.job.token);
      if (this.runningById.get(t.job.id) === t) this.runningById.delete(t.job.id);
      this.runningCount.set(queue, (this.runningCount.get(queue) as number) - 1);
    } else {
      const buffer = this.buffers.get(queue);
      const i = buffer?.indexOf(t) ?? -1;
      if (i >= 0) buffer?.splice(i, 1);
    }
    return true;
  }

  private afterSettle(t: Tracked): void {
    this.freed.add(t.job.queue);
    if (!this.batching) this.capacityFreed();
    if (this.tracked.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /**
   * Ends sessions with nothing running: all of them when closing or when another
   * queue waits for a thread; otherwise all but one per queue (kept warm so an
   * idle queue's next job starts without a new Piscina task).
   */
  private endIdleSessions(all: boolean): void {
    const warm = new Set<string>();
    let ended = false;
    for (const s of this.sessions) {
      if (s.ending || s.running.size > 0) continue;
      const buffered = (this.buffers.get(s.queue)?.length ?? 0) > 0;
      if (!all && !buffered && !warm.has(s.queue)) {
        warm.add(s.queue);
        continue;
      }
      if (!all && buffered) continue;
      s.ending = true;
      ended = true;
      s.port.postMessage({ type: 'end' } satisfies ToWorker);
    }
    if (ended) this.emitPool();
  }

  private emitPool(): void {
    const pool = this.options.pool;
    this.options.events.emit('pool:changed', {
      threads: pool.threads.length,
      busy: this.threadsBusy(),
      queued: pool.queueSize,
    });
  }
}

function emptyBatch(): JobBatch {
  return { ids: [], tokens: [], kinds: [], payloads: [], attempts: [], maxAttempts: [] };
}

function describeThreadDeath(err: unknown): string {
  const e = err as { code?: string; message?: string } | undefined;
  if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY')
    return `WorkerOutOfMemory: the worker thread ran out of memory (${e.message ?? ''}); raise pool.maxOldGenerationSizeMb or make the task use less`;
  const message = e?.message ?? String(err);
  if (/exited|exit code/i.test(message))
    return `WorkerExited: the worker thread exited while running this job (${message}); did the task call process.exit()?`;
  return `WorkerCrashed: the worker thread died while running this job: ${message}`;
}
