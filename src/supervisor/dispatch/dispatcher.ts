/**
 * The dispatcher: claimed jobs in, outcomes out.
 *
 * Each claimed job becomes a run in the ledger (ledger.ts), keyed by its claim
 * token: `buffered` until a thread takes it, then `running` on a session
 * (session.ts). Its outcome is decided exactly once (outcome.ts), after the
 * thread has really stopped it; then the run leaves the ledger. A newer run of
 * a job (claimed again after its lease was lost) waits until the older run has
 * ended: one job never runs twice at once here.
 *
 * Capacity: a queue holds at most concurrency + prefetch runs and runs at most
 * `concurrency`; sessions never exceed maxThreads, so Piscina never queues
 * work. Placement (placement.ts) keeps exclusive tasks alone on a thread and
 * gives a starved queue a thread back. Queues are pumped round robin
 * (pump.ts). A run waits until its task's options are known (kindKnown); runs
 * of other kinds go past it. Every outcome, of a run or of a job never run
 * (oversized, handed back), leaves through report(): the one way to the
 * completer.
 *
 * Runs of a batch task gather and start as calls of many, whose outcomes leave
 * together (batch_dispatch.ts); the plain pump passes them by.
 *
 * A session's messages (results, progress, a thread's death) are handled in
 * thread_messages.ts.
 *
 * Stopping a run (timeout, lost lease, shutdown) asks the task through
 * ctx.signal; one still going `abortGraceMs` later loses its thread (the only
 * way to stop `for(;;){}`), and the thread's other runs are handed back.
 * Shutdown: drainBuffers() → whenIdle() within the grace → abortAll() → close().
 */
import type { ClaimedJob, Fence } from '../../queue/types.ts';
import { refOf } from '../events.ts';
import { applyTraits, type DispatcherOptions } from './options.ts';
import { newRun, RunLedger, type Run } from './ledger.ts';
import type { Outcome } from '../complete/outcome.ts';
import { recordCall } from './batch_call.ts';
import { BatchDispatch } from './batch_dispatch.ts';
import { decideOversized, type StopReason } from './outcome.ts';
import { startBuffered, type PumpParts } from './pump.ts';
import type { RunSession, SessionHandlers } from './run_session.ts';
import { SessionSet } from './session_set.ts';
import { DeadlineSweep, deadlineAt } from './sweep.ts';
import { threadMessages } from './thread_messages.ts';

export class Dispatcher {
  private readonly ledger: RunLedger;
  private readonly sessions: SessionSet;
  private readonly sweep: DeadlineSweep;
  private readonly handlers: SessionHandlers;
  private readonly pumpParts: PumpParts;
  private readonly batches: BatchDispatch;
  private readonly queueNames: string[];
  private closing = false;
  private readonly idleWaiters: Array<() => void> = [];
  private nextQueue = 0;
  /** When each queue last started a run (performance.now()). */
  private readonly lastStartAt = new Map<string, number>();
  /** Settling a batch of results: capacity is announced once, at its end. */
  private batching = false;
  private readonly freed = new Set<string>();

  constructor(private readonly options: DispatcherOptions) {
    this.queueNames = Object.keys(options.queues);
    this.ledger = new RunLedger(this.queueNames);
    this.sessions = new SessionSet(options.sessions, options.events);
    this.handlers = threadMessages({
      ledger: this.ledger,
      sessions: this.sessions,
      events: options.events,
      ...(options.progress ? { progress: options.progress } : {}),
      settle: (run, outcome) => this.settle(run, outcome),
      beginSettling: () => (this.batching = true),
      endSettling: () => {
        this.batching = false;
        this.capacityFreed();
      },
      pump: () => this.pump(),
    });
    this.pumpParts = {
      ledger: this.ledger,
      sessions: this.sessions,
      queues: options.queues,
      maxThreads: options.maxThreads,
      known: (run) => (run.known || applyTraits(run, this.options)) && !this.batches.gathers(run),
      open: (queue) => this.sessions.open(queue, this.handlers),
      start: (run, session, now) => this.start(run, session, now),
    };
    this.batches = new BatchDispatch({
      ...this.pumpParts,
      events: options.events,
      pump: () => this.pump(),
      settle: (run, outcome) => this.settle(run, outcome),
      report: (run, outcome) => this.report(run.job, outcome),
      record: (entries) => recordCall(options.outcomes, entries),
      leaseLost: (tokens) => this.leaseLost(tokens),
      check: options.startCall,
    });
    this.sweep = new DeadlineSweep(
      options.sweepMs ?? 250,
      () => this.ledger.runs(),
      (run) => {
        this.options.events.emit('job:timeout', { job: refOf(run.job), timeoutMs: run.timeoutMs });
        this.stopRun(run, 'timeout');
      },
    );
    this.sweep.start();
  }

  /** A kind's task options have become known: its waiting runs may start. */
  kindKnown(kind: string): void {
    for (const run of this.ledger.runs())
      if (run.state === 'buffered' && run.job.kind === kind && applyTraits(run, this.options))
        this.batches.gathers(run);
    this.pump();
  }

  /** Free places of a queue: concurrency + prefetch minus what it holds. */
  capacity(queue: string): number {
    const q = this.options.queues[queue];
    if (!q || this.closing) return 0;
    return q.concurrency + q.prefetch - this.inFlight(queue);
  }

  /** The claims held here: the heartbeat renews them. */
  fences(): Fence[] {
    return [...this.ledger.fences(), ...this.batches.fences()];
  }

  get size(): number {
    return this.ledger.size;
  }

  inFlight(queue: string): number {
    return this.ledger.buffered(queue) + this.ledger.running(queue);
  }

  threadsBusy(): number {
    return this.sessions.busy();
  }

  /** Takes newly claimed jobs. */
  add(jobs: ClaimedJob[]): void {
    for (const job of jobs) {
      if (job.payload === null && job.payloadDeferred !== true) {
        // Over the size limit (a plain-SQL insert can write one): never sent to a
        // thread, dead-lettered on its own. Its neighbours run as usual.
        this.report(job, decideOversized(job, this.options.maxPayloadBytes));
        continue;
      }
      // Claimed again while an older run is held here: its lease was lost (reaped
      // during a pause, or cancelled and re-queued). Stop it (its writes are fenced
      // off anyway); the new run waits in the buffer until it has ended (pump).
      const stale = this.ledger.latestOf(job.id);
      if (stale?.state === 'running') this.stopRun(stale, 'lease-lost');
      else if (stale) this.settle(stale, { type: 'drop' });
      const run = newRun(job);
      applyTraits(run, this.options);
      this.ledger.add(run);
      this.batches.gathers(run);
    }
    this.pump();
  }

  /**
   * Jobs claimed for this supervisor that it will not run (the fetcher held
   * them for a start slot, or claimed them as their queue was being paused):
   * handed back, without using an attempt, through the same report path as
   * every outcome. They never entered the ledger, so no capacity changes here.
   */
  handBack(jobs: ClaimedJob[], reason: string): void {
    for (const job of jobs) this.report(job, { type: 'release', reason });
  }

  /** Leases the heartbeat found gone: runs stopped, nothing written, 'lease:lost' once each has ended. */
  leaseLost(tokens: string[]): void {
    for (const token of tokens) {
      const run = this.ledger.get(token);
      if (run?.state === 'buffered') this.settle(run, { type: 'drop' });
      else if (run) this.stopRun(run, 'lease-lost');
    }
  }

  /** Shutdown, step 1: no more dispatching; buffered jobs are handed back now. */
  drainBuffers(): void {
    this.batches.drain();
    this.closing = true;
    for (const run of this.ledger.takeBuffered())
      this.settle(run, { type: 'release', reason: 'shutdown before start' });
    this.endIdleSessions(true);
  }

  /** A queue was paused: its claimed jobs not yet started are handed back now; running ones go on. */
  releaseBuffered(queue: string): void {
    for (const run of this.ledger.takeBuffered(queue)) this.settle(run, { type: 'release', reason: 'queue paused' });
  }

  /** Resolves when no job is held (or at once). */
  whenIdle(): Promise<void> {
    if (this.ledger.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Shutdown, step 2 (grace over): abort every running job; they are handed back. */
  abortAll(): void {
    for (const run of [...this.ledger.runs()]) {
      if (run.state === 'running') this.stopRun(run, 'shutdown');
      else this.settle(run, { type: 'release', reason: 'shutdown before start' });
    }
  }

  /** Ends every session and waits for the threads to be given back. */
  async close(): Promise<void> {
    this.closing = true;
    this.sweep.stop();
    this.batches.close();
    this.endIdleSessions(true);
    await this.sessions.settled();
  }

  /**
   * Sends buffered runs to threads, queue by queue, starting one further each
   * time; queues that hold no thread go first, the one that started a run
   * least recently first of all. A thread another queue gave back for a
   * starved one (placement.ts) is then the starved queue's: in plain rotation
   * the giver, pumped first half the time, took it again, cycle after cycle (a
   * cpu job waited out 36 of 40 default jobs in one run of eight).
   */
  private pump(): void {
    if (this.closing) return;
    const names = this.queueNames;
    const holding = new Set<string>();
    for (const session of this.sessions) holding.add(session.queue);
    const rotation = names.map((_, i) => names[(this.nextQueue + i) % names.length] as string);
    const last = (q: string) => this.lastStartAt.get(q) ?? -1;
    const threadless = rotation.filter((q) => !holding.has(q)).sort((a, b) => last(a) - last(b));
    let starved = false;
    for (const queue of [...threadless, ...rotation.filter((q) => holding.has(q))]) {
      if (this.batches.start(queue)) starved = true;
      if (startBuffered(this.pumpParts, queue)) starved = true;
    }
    this.nextQueue = (this.nextQueue + 1) % Math.max(1, names.length);
    this.sessions.flushAll();
    this.endIdleSessions(starved);
  }

  private start(run: Run, session: RunSession, now: number): void {
    this.lastStartAt.set(run.job.queue, now);
    this.ledger.started(run, session);
    run.startedAt = now;
    run.deadline = deadlineAt(now, run.timeoutMs, session.ready);
    session.send(run.job, run.exclusive);
  }

  private stopRun(run: Run, reason: StopReason): void {
    const session = run.session;
    if (run.stop || run.state !== 'running' || !session) return;
    if (this.batches.spares(run, reason)) return;
    run.stop = reason;
    session.abort(run.job.token, reason);
    // A job that ignores its signal (a CPU loop never sees it) loses its thread.
    const grace = setTimeout(() => {
      if (this.ledger.get(run.job.token) === run) session.terminate(run.job.id, reason);
    }, this.options.abortGraceMs);
    grace.unref();
  }

  /** Carries out an outcome, once per run: later calls for the same run do nothing. */
  private settle(run: Run, outcome: Outcome): void {
    if (!this.ledger.forget(run)) return;
    if (!this.batches.settled(run, outcome)) this.report(run.job, outcome);
    this.freed.add(run.job.queue);
    if (!this.batching) this.capacityFreed();
    if (this.ledger.size === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * The one way to the completer: every outcome, of a run or of a job never
   * run, goes out here. A dropped run (its lease was lost: another owner may
   * hold the job) writes nothing and is only reported as 'lease:lost'.
   */
  private report(job: ClaimedJob, outcome: Outcome): void {
    if (outcome.type === 'drop') {
      this.options.hooks?.lostRunsEnded([refOf(job)]);
      this.options.events.emit('lease:lost', { jobs: [refOf(job)] });
    } else this.options.outcomes.record(job, outcome);
  }

  /** Tells fetchers of the queues that gave back places (once per batch, not per job). */
  private capacityFreed(): void {
    if (!this.closing) for (const queue of this.freed) this.options.onCapacity(queue);
    this.freed.clear();
  }

  private endIdleSessions(all: boolean): void {
    this.sessions.endIdle(all, (queue) => this.ledger.buffered(queue) > 0);
  }
}
