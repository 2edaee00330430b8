/**
 * Batch tasks in the dispatcher: their runs gather (batch_gather.ts), a due
 * gathering becomes a call (batch_call.ts), and a call starts all its jobs on
 * one thread at once, as one `call` message (worker/batch_run.ts).
 *
 * A run of a batch task is a run like any other in the ledger: buffered while
 * it gathers (it holds a place of its queue), running once its call started,
 * each with its own claim, lease, deadline and outcome. Only its path differs:
 * the plain pump passes it by (dispatcher.ts), and the pump asks start(queue)
 * for the queue's calls first.
 *
 * Starting a call: its start statement (`check`: every job's lease renewed,
 * the call's id recorded as jobs.batch_id) runs first, and a job whose claim
 * it finds lost (cancelled while it gathered, reaped) is dropped, not passed.
 * Then the call waits for places: it starts only when the queue runs fewer
 * than `concurrency - size` jobs (a call of n jobs holds n places), on an idle
 * thread of its queue or a new one (placement.ts, as an exclusive run: a call
 * has its thread to itself). Calls of a queue start oldest first.
 *
 * Shutdown (drain): every gathering is called at once, without waiting for
 * maxWait or for its start statement (which still runs, beside the call); a
 * call that finds no place or thread now is handed back. A call of
 * rate-limited jobs does not wait for its start statement either (it runs
 * beside): the jobs' start windows leave no time for a round trip.
 *
 * Outcomes: a started job's outcome is collected by its call (settled());
 * once every job's is in, the call's outcomes go to the completer together,
 * for one write. A job whose lease is lost while its call runs is marked
 * stopped and dropped; the call itself is aborted only when no job of it is
 * still held (spares()).
 */
import type { Fence } from '../../queue/types.ts';
import type { CallEntry, Outcome } from '../complete/outcome.ts';
import type { SupervisorEvents } from '../events.ts';
import { BatchCall } from './batch_call.ts';
import { BatchGather, type Gathering } from './batch_gather.ts';
import type { Run } from './ledger.ts';
import { place } from './placement.ts';
import type { StartCall } from './options.ts';
import type { PumpParts } from './pump.ts';
import type { StopReason } from './outcome.ts';

export interface BatchHost extends Omit<PumpParts, 'known'> {
  events: SupervisorEvents;
  /** Pumps the dispatcher's queues. */
  pump(): void;
  /** Carries out an outcome as the dispatcher does for any run (a call it cannot start hands its runs back). */
  settle(run: Run, outcome: Outcome): void;
  /** Reports an outcome of a run that left the ledger (a dropped job of a call: 'lease:lost'). */
  report(run: Run, outcome: Outcome): void;
  /** A call's outcomes, together. */
  record(entries: CallEntry[]): void;
  /** Claims the start statement found lost. */
  leaseLost(tokens: string[]): void;
  check?: StartCall;
}

export class BatchDispatch {
  private readonly gather: BatchGather;
  /** Calls not yet started, by queue, oldest first. */
  private readonly pending = new Map<string, BatchCall[]>();
  /** The call of each run, by claim token, from its forming until its outcome. */
  private readonly members = new Map<string, BatchCall>();
  private draining = false;

  constructor(private readonly host: BatchHost) {
    this.gather = new BatchGather({ queues: host.queues, alive: (r) => this.alive(r), wake: () => host.pump() });
  }

  /** A buffered run of a batch task goes to its gathering (once), never to the plain pump: true for such a run. */
  gathers(run: Run): boolean {
    if (run.batch === undefined) return false;
    if (!this.members.has(run.job.token)) this.gather.add(run);
    return true;
  }

  /** The pump's step for a queue's calls; true when a call waits for a thread. */
  start(queue: string): boolean {
    if (!this.gather.has(queue) && !this.pending.has(queue)) return false;
    for (const g of this.gather.due(queue, this.draining)) this.form(g);
    return this.startReady(queue);
  }

  /** Shutdown: every gathering is called now; what cannot start now is handed back. */
  drain(): void {
    this.draining = true;
    const queues = new Set([...this.pending.keys(), ...Object.keys(this.host.queues)]);
    for (const queue of queues) {
      for (const call of this.pending.get(queue) ?? []) call.state = 'ready';
      this.start(queue);
    }
  }

  /** A run's outcome: true when its call collects it (the dispatcher reports nothing more for it). */
  settled(run: Run, outcome: Outcome): boolean {
    const call = this.members.get(run.job.token);
    if (!call) return false;
    this.members.delete(run.job.token);
    if (call.state !== 'started') return false;
    if (outcome.type === 'drop') this.host.report(run, outcome);
    const entries = call.collect(run, outcome);
    if (entries && entries.length > 0) this.host.record(entries);
    return true;
  }

  /** A stop asked of a run: true when its call goes on without it (its lease alone was lost). */
  spares(run: Run, reason: StopReason): boolean {
    if (reason !== 'lease-lost') return false;
    const call = this.members.get(run.job.token);
    if (call?.state !== 'started' || !call.othersGoOn(run, (r) => this.host.ledger.get(r.job.token) === r))
      return false;
    run.stop = reason;
    return true;
  }

  /** Claims of started calls' jobs whose outcome is in and not yet recorded. */
  fences(): Fence[] {
    if (this.members.size === 0) return [];
    const calls = new Set(this.members.values());
    return [...calls].flatMap((c) => (c.state === 'started' ? c.fences() : []));
  }

  close(): void {
    this.gather.close();
  }

  /** Calls out of a due gathering: one of its size, and more while it holds that many. */
  private form(g: Gathering): void {
    do {
      const runs = g.runs.filter((r) => !this.host.ledger.isRunning(r.job.id)).slice(0, g.size);
      if (runs.length === 0) return;
      const since = this.gather.since(g);
      this.gather.take(g, runs);
      const first = runs[0] as Run;
      const call = new BatchCall(first.job.token, g.queue, g.kind, g.key, runs, since);
      for (const r of runs) this.members.set(r.job.token, call);
      const list = this.pending.get(g.queue) ?? [];
      list.push(call);
      this.pending.set(g.queue, list);
      this.check(call);
    } while (g.runs.length >= g.size);
  }

  private check(call: BatchCall): void {
    const check = this.host.check;
    // A rate-limited job may start at most 20 ms after its slot: no round trip before it.
    if (!check || this.draining || call.runs.some((r) => r.job.startWindow !== undefined)) {
      call.state = 'ready';
      if (check) void this.checkBeside(check, call);
      return;
    }
    const fences = call.runs.map((r) => ({ id: r.job.id, token: r.job.token }));
    void check(call.id, fences).then((kept) => {
      if (kept) this.lost(fences, kept);
      call.state = 'ready';
      this.host.pump();
    });
  }

  /** At shutdown (or with start slots) the call starts at once; its start statement still runs, and what it finds lost is stopped. */
  private async checkBeside(check: StartCall, call: BatchCall): Promise<void> {
    const fences = call.runs.map((r) => ({ id: r.job.id, token: r.job.token }));
    const kept = await check(call.id, fences);
    if (kept) this.lost(fences, kept);
  }

  private lost(fences: Fence[], kept: Set<string>): void {
    const lost = fences.filter((f) => !kept.has(f.token)).map((f) => f.token);
    if (lost.length > 0) this.host.leaseLost(lost);
  }

  /** Starts the queue's ready calls, oldest first, while places and threads allow. */
  private startReady(queue: string): boolean {
    const list = this.pending.get(queue);
    if (!list) return false;
    const settings = this.host.queues[queue];
    let starved = false;
    while (list.length > 0 && settings) {
      const call = list[0] as BatchCall;
      if (call.state !== 'ready') break;
      const runs = this.runnable(call);
      if (runs.length === 0) {
        list.shift();
        continue;
      }
      const placement =
        this.host.ledger.running(queue) + runs.length > settings.concurrency
          ? null
          : place(this.host.sessions, {
              queue,
              exclusive: true,
              jobsPerThread: settings.jobsPerThread,
              maxThreads: this.host.maxThreads,
            });
      if (placement === null || placement.type === 'wait') {
        if (placement?.yieldFrom) placement.yieldFrom.yielding = true;
        starved = placement !== null;
        if (!this.draining) break;
        list.shift();
        for (const r of runs) this.host.settle(r, { type: 'release', reason: 'shutdown before start' });
        continue;
      }
      list.shift();
      this.launch(call, runs, placement.type === 'use' ? placement.session : this.host.open(queue));
    }
    if (list.length === 0) this.pending.delete(queue);
    return starved;
  }

  /** The call's jobs still held and buffered; one whose older run still stops on a thread gathers again. */
  private runnable(call: BatchCall): Run[] {
    const runs: Run[] = [];
    for (const r of call.runs) {
      if (!this.alive(r)) {
        this.members.delete(r.job.token);
      } else if (this.host.ledger.isRunning(r.job.id)) {
        this.members.delete(r.job.token);
        this.gather.add(r);
      } else runs.push(r);
    }
    return runs;
  }

  private launch(call: BatchCall, runs: Run[], session: ReturnType<BatchHost['open']>): void {
    const now = performance.now();
    for (const r of runs) this.host.start(r, session, now);
    this.unbuffer(call.queue);
    call.started(runs);
    const jobs = session.flush({ callId: call.id, key: call.key });
    const wall = Date.now();
    const { events } = this.host;
    if (events.listenerCount('job:started') > 0)
      events.emit('job:started', { jobs, waitMs: jobs.map((j) => wall - j.runAtMs) });
    events.emit('batch:called', { queue: call.queue, kind: call.kind, size: runs.length, fillMs: now - call.since });
  }

  /** Takes the queue's started runs out of its buffer. */
  private unbuffer(queue: string): void {
    const buffer = this.host.ledger.buffer(queue);
    let kept = 0;
    for (const r of buffer) if (r.state === 'buffered') buffer[kept++] = r;
    buffer.length = kept;
  }

  private alive(run: Run): boolean {
    return this.host.ledger.get(run.job.token) === run && run.state === 'buffered';
  }
}
