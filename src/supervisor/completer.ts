/**
 * The completer: outcomes in, batched fenced writes out.
 *
 * Outcomes wait at most `flushIntervalMs` (or until `batchSize` are queued) and
 * are written with one statement per kind of write. A write that fails for a
 * connection reason is kept and tried again; the jobs stay in `ids()` so the
 * heartbeat keeps their leases meanwhile. Rows the database refuses (fenced:
 * this supervisor no longer owns that attempt) are reported, never forced.
 */
import type { Settings } from '../config.ts';
import { completeJobs, failJobs, releaseJobs } from '../queue/complete.ts';
import type { Store } from '../queue/sql.ts';
import type { ClaimedJob, Failure } from '../queue/types.ts';
import { retryDelay } from './backoff.ts';
import type { Outcome } from './dispatcher.ts';
import type { FailedJob, FinishedJob, JobRef, SupervisorEvents } from './events.ts';

const MAX_ERROR_CHARS = 4000;
const MAX_CONCURRENT_WRITES = 2;

interface Pending {
  done: Array<{ job: ClaimedJob; runMs: number }>;
  failed: Array<{ job: ClaimedJob; runMs: number; failure: Failure }>;
  released: Array<{ job: ClaimedJob; reason: string }>;
}

export class Completer {
  private queued: Pending = { done: [], failed: [], released: [] };
  private readonly writing = new Set<Promise<void>>();
  private readonly held = new Map<string, ClaimedJob>();
  private timer: NodeJS.Timeout | undefined;
  private retryDelayMs = 0;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly owner: string,
    private readonly settings: Pick<Settings, 'backoff' | 'completer'>,
    private readonly events: SupervisorEvents,
  ) {}

  /** Jobs whose outcome is not yet written: the heartbeat keeps their leases. */
  ids(): string[] {
    return [...this.held.keys()];
  }

  get size(): number {
    return this.held.size;
  }

  add(outcome: Outcome): void {
    const job = outcome.job;
    switch (outcome.type) {
      case 'drop':
        this.events.emit('lease:lost', { jobs: [refOf(job)] });
        return;
      case 'done':
        this.queued.done.push({ job, runMs: outcome.runMs });
        break;
      case 'failed': {
        const delayMs = outcome.retryInMs ?? retryDelay(job.attempt, this.settings.backoff);
        const error = clean(outcome.error);
        this.queued.failed.push({ job, runMs: outcome.runMs, failure: { id: job.id, attempt: job.attempt, error, permanent: outcome.permanent, delayMs } });
        break;
      }
      case 'release':
        this.queued.released.push({ job, reason: outcome.reason });
        break;
    }
    this.held.set(job.id, job);
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped && this.writing.size > 0) return;
    const count = this.queued.done.length + this.queued.failed.length + this.queued.released.length;
    if (count === 0) return;
    if (count >= this.settings.completer.batchSize && this.writing.size < MAX_CONCURRENT_WRITES && this.retryDelayMs === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.write();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      if (this.writing.size < MAX_CONCURRENT_WRITES) this.write();
      else this.schedule();
    }, Math.max(this.settings.completer.flushInterval, this.retryDelayMs));
  }

  private write(): void {
    const batch = this.queued;
    this.queued = { done: [], failed: [], released: [] };
    const p = this.writeBatch(batch).finally(() => {
      this.writing.delete(p);
      this.schedule();
    });
    this.writing.add(p);
  }

  private async writeBatch(batch: Pending): Promise<void> {
    const results = await Promise.allSettled([this.writeDone(batch.done), this.writeFailed(batch.failed), this.writeReleased(batch.released)]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      // Nothing of a failed statement was written: keep its outcomes and try again.
      this.retryDelayMs = Math.min(5000, Math.max(50, this.retryDelayMs * 2));
      this.events.emit('db:error', { loop: 'completer', err: failed.reason });
    } else {
      this.retryDelayMs = 0;
    }
  }

  private async writeDone(items: Pending['done']): Promise<void> {
    if (items.length === 0) return;
    try {
      const written = new Set(await completeJobs(this.store, this.owner, items.map((i) => ({ id: i.job.id, attempt: i.job.attempt }))));
      const done: FinishedJob[] = [];
      const fenced: JobRef[] = [];
      for (const i of items) {
        this.held.delete(i.job.id);
        if (written.has(i.job.id)) done.push({ ...refOf(i.job), runMs: i.runMs });
        else fenced.push(refOf(i.job));
      }
      if (done.length) this.events.emit('job:completed', { jobs: done });
      if (fenced.length) this.events.emit('job:fenced', { jobs: fenced });
    } catch (err) {
      this.queued.done.push(...items);
      throw err;
    }
  }

  private async writeFailed(items: Pending['failed']): Promise<void> {
    if (items.length === 0) return;
    try {
      const written = new Map((await failJobs(this.store, this.owner, items.map((i) => i.failure))).map((r) => [r.id, r.status]));
      const retried: FailedJob[] = [];
      const dead: FailedJob[] = [];
      const fenced: JobRef[] = [];
      for (const i of items) {
        this.held.delete(i.job.id);
        const status = written.get(i.job.id);
        const info = { ...refOf(i.job), runMs: i.runMs, error: i.failure.error };
        if (status === 'pending') retried.push(info);
        else if (status === 'failed') dead.push(info);
        else fenced.push(refOf(i.job));
      }
      if (retried.length) this.events.emit('job:retried', { jobs: retried });
      if (dead.length) this.events.emit('job:dead', { jobs: dead });
      if (fenced.length) this.events.emit('job:fenced', { jobs: fenced });
    } catch (err) {
      this.queued.failed.push(...items);
      throw err;
    }
  }

  private async writeReleased(items: Pending['released']): Promise<void> {
    if (items.length === 0) return;
    try {
      const written = new Set(await releaseJobs(this.store, this.owner, items.map((i) => ({ id: i.job.id, attempt: i.job.attempt }))));
      const byReason = new Map<string, JobRef[]>();
      for (const i of items) {
        this.held.delete(i.job.id);
        if (!written.has(i.job.id)) continue;
        const list = byReason.get(i.reason) ?? [];
        list.push(refOf(i.job));
        byReason.set(i.reason, list);
      }
      for (const [reason, jobs] of byReason) this.events.emit('job:released', { jobs, reason });
    } catch (err) {
      this.queued.released.push(...items);
      throw err;
    }
  }

  /**
   * Writes everything queued, retrying failed writes until `deadline`
   * (ms since epoch). Resolves when nothing is left or the deadline passed.
   */
  async flush(deadline: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    while (Date.now() < deadline) {
      await Promise.allSettled([...this.writing]);
      if (this.held.size === 0) return;
      const pendingCount = this.queued.done.length + this.queued.failed.length + this.queued.released.length;
      if (pendingCount === 0) {
        if (this.writing.size === 0) return; // nothing queued, nothing in flight
        continue;
      }
      if (this.retryDelayMs > 0) await new Promise((r) => setTimeout(r, Math.min(this.retryDelayMs, Math.max(0, deadline - Date.now()))));
      const batch = this.queued;
      this.queued = { done: [], failed: [], released: [] };
      await this.writeBatch(batch);
    }
  }
}

function refOf(job: ClaimedJob): JobRef {
  return { id: job.id, queue: job.queue, kind: job.kind, attempt: job.attempt };
}

/** last_error text: bounded, no NUL (PostgreSQL text cannot hold it). */
function clean(error: string): string {
  const text = error.replaceAll('\u0000', '\\0');
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}… (truncated)` : text;
}
