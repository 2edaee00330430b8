/**
 * The open sessions, at most one per worker thread.
 *
 * Invariants: size() never exceeds maxThreads (the dispatcher asks placement
 * before open()); a session leaves the set when its Piscina task settles; an
 * ending session takes no new runs. Idle sessions are ended except one per
 * queue, kept warm so an idle queue's next job starts without a new Piscina
 * task, unless another queue waits for a thread.
 */
import { refOf, type SupervisorEvents } from '../events.ts';
import type { RunSession, SessionHandlers, SessionSource } from './run_session.ts';

export class SessionSet implements Iterable<RunSession> {
  private readonly sessions = new Set<RunSession>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly source: SessionSource,
    private readonly events: SupervisorEvents,
  ) {}

  [Symbol.iterator](): Iterator<RunSession> {
    return this.sessions.values();
  }

  open(queue: string, handlers: SessionHandlers): RunSession {
    const session = this.source.open(queue, handlers);
    this.sessions.add(session);
    const done = session.done;
    this.pending.add(done);
    void done.finally(() => this.pending.delete(done));
    this.emitChanged();
    return session;
  }

  /** The session's task has settled. */
  delete(session: RunSession): void {
    this.sessions.delete(session);
    this.emitChanged();
  }

  /** Sends every session's queued runs, then reports them as 'job:started'. */
  flushAll(): void {
    const report = this.events.listenerCount('job:started') > 0;
    const now = Date.now();
    for (const s of this.sessions) {
      const jobs = s.flush();
      if (!report || jobs.length === 0) continue;
      this.events.emit('job:started', { jobs: jobs.map(refOf), waitMs: jobs.map((job) => now - job.runAtMs) });
    }
  }

  /** Threads with at least one run. */
  busy(): number {
    let busy = 0;
    for (const s of this.sessions) if (s.running.size > 0) busy++;
    return busy;
  }

  /**
   * Ends sessions with nothing running: all of them when `all`; otherwise the
   * yielding ones and all but one per queue with nothing buffered.
   */
  endIdle(all: boolean, buffered: (queue: string) => boolean): void {
    const warm = new Set<string>();
    let ended = false;
    for (const s of this.sessions) {
      if (s.ending || s.running.size > 0) continue;
      const waiting = buffered(s.queue);
      if (!all && !s.yielding && !waiting && !warm.has(s.queue)) {
        warm.add(s.queue);
        continue;
      }
      if (!all && !s.yielding && waiting) continue;
      s.end();
      ended = true;
    }
    if (ended) this.emitChanged();
  }

  /** Resolves when every session's task has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }

  private emitChanged(): void {
    this.events.emit('pool:changed', {
      threads: this.source.threads(),
      busy: this.busy(),
      queued: this.source.queued(),
    });
  }
}
