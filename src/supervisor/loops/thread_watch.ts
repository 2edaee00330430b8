/**
 * Worker threads that were terminated but have not died.
 *
 * Terminating a thread stops JavaScript, not a thread blocked inside a
 * synchronous call (`execSync`, `Atomics.wait` is fine, native code, a read
 * from a hung mount): it dies only when the call returns. Meanwhile it keeps
 * its OS thread and memory, Piscina no longer counts it, and `process.exit()`
 * waits for it.
 *
 * States of a watched thread: running → terminated (Piscina destroyed it) →
 * stuck (still alive `STUCK_AFTER_MS` later) → gone (its `exit` event). The
 * watch is process-wide: whatever pool a thread came from, it is this process
 * that cannot exit while it lives.
 */
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';

export const STUCK_AFTER_MS = 5000;

interface Watched {
  worker: Worker;
  terminatedAt?: number;
  stuck: boolean;
  timer?: NodeJS.Timeout;
}

export interface ThreadWatchEvents {
  /** A terminated thread is still alive after STUCK_AFTER_MS; `stuck` counts all such threads. */
  stuck: [{ threadId: number; stuck: number }];
  /** A stuck thread finally died. */
  gone: [{ threadId: number; stuck: number }];
}

class ThreadWatch extends EventEmitter<ThreadWatchEvents> {
  private readonly threads = new Map<number, Watched>();
  /** Called after any watched thread dies (end() waits through these). */
  private readonly onExit = new Set<() => void>();

  /** Follows every thread of `pool` from creation to death. */
  watch(pool: Piscina): void {
    pool.on('workerCreate', (iface: { id: number }) => {
      // Read the id now: Piscina's getter reads the Worker's threadId, -1 once it has exited.
      const id = iface.id;
      const worker = pool.threads.find((w) => w.threadId === id);
      if (!worker || this.threads.has(id)) return;
      this.threads.set(id, { worker, stuck: false });
      worker.once('exit', () => this.gone(id));
    });
    pool.on('workerDestroy', (iface: { id: number }) => this.terminated(iface.id));
  }

  /** Threads still alive more than STUCK_AFTER_MS after termination. */
  get stuck(): number {
    let n = 0;
    for (const t of this.threads.values()) if (t.stuck) n++;
    return n;
  }

  /**
   * For the exit: terminates every thread alive now and waits up to `ms` for
   * them to die; resolves with how many still live. Threads Piscina starts
   * meanwhile (it replaces a thread that dies, even after close) are fresh and
   * idle: process.exit() ends them at once.
   */
  async end(ms: number): Promise<number> {
    const ids = [...this.threads.keys()];
    const remaining = () => ids.filter((id) => this.threads.has(id)).length;
    for (const t of this.threads.values()) void t.worker.terminate();
    if (remaining() === 0) return 0;
    await new Promise<void>((resolve) => {
      const check = () => {
        if (remaining() > 0) return;
        clearTimeout(timer);
        this.onExit.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.onExit.delete(check);
        resolve();
      }, ms);
      this.onExit.add(check);
    });
    return remaining();
  }

  private terminated(threadId: number): void {
    const t = this.threads.get(threadId);
    if (!t || t.terminatedAt !== undefined) return;
    t.terminatedAt = Date.now();
    t.timer = setTimeout(() => {
      if (!this.threads.has(threadId)) return;
      t.stuck = true;
      this.emit('stuck', { threadId, stuck: this.stuck });
    }, STUCK_AFTER_MS);
    t.timer.unref();
  }

  private gone(threadId: number): void {
    const t = this.threads.get(threadId);
    if (!t) return;
    clearTimeout(t.timer);
    this.threads.delete(threadId);
    if (t.stuck) this.emit('gone', { threadId, stuck: this.stuck });
    for (const check of [...this.onExit]) check();
  }
}

/** The process's one watch (see the file comment). */
export const threadWatch = new ThreadWatch();
