/**
 * The completer: outcomes in, batched fenced writes out.
 *
 * Outcomes wait at most `flushIntervalMs` (or until `batchSize` are queued) and
 * are written with one statement per kind of write, at most two batches in
 * flight. A write that fails for a connection reason is kept and tried again;
 * the jobs stay in `ids()` so the heartbeat keeps their leases meanwhile. Rows
 * the database refuses (fenced: this supervisor no longer holds that claim)
 * are reported, never forced.
 *
 * Outcomes are kept as parallel arrays: at tens of thousands of jobs per second
 * an object per outcome is measurable garbage-collector time.
 */
import type { Settings } from '../config.ts';
import { completeJobs, failJobs, releaseJobs } from '../queue/complete.ts';
import type { Store } from '../queue/sql.ts';
import type { ClaimedJob, Fence } from '../queue/types.ts';
import { retryDelay } from './backoff.ts';
import type { Failure, OutcomeSink } from './dispatcher.ts';
import type { JobRef, SupervisorEvents } from './events.ts';

const MAX_ERROR_CHARS = 4000;

class Batch {
  doneJobs: ClaimedJob[] = [];
  doneMs: number[] = [];
  failedJobs: ClaimedJob[] = [];
  failedMs: number[] = [];
  errors: string[] = [];
  permanent: boolean[] = [];
  delays: number[] = [];
  released: ClaimedJob[] = [];
  reasons: string[] = [];

  get size(): number {
    return this.doneJobs.length + this.failedJobs.length + this.released.length;
  }

  /** Puts the parts of `other` that `failed` names back into this batch (a write failed). */
  restore(other: Batch, parts: { done: boolean; failed: boolean; released: boolean }): void {
    if (parts.done) {
      this.doneJobs.push(...other.doneJobs);
      this.doneMs.push(...other.doneMs);
    }
    if (parts.failed) {
      this.failedJobs.push(...other.failedJobs);
      this.failedMs.push(...other.failedMs);
      this.errors.push(...other.errors);
      this.permanent.push(...other.permanent);
      this.delays.push(...other.delays);
    }
    if (parts.released) {
      this.released.push(...other.released);
      this.reasons.push(...other.reasons);
    }
  }
}

export class Completer implements OutcomeSink {
  private queued = new Batch();
  /** The write in flight, if any. */
  private writing: Promise<void> | undefined;
  /** By claim token. */
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

  /** Claims whose outcome is not yet written: the heartbeat keeps their leases. */
  fences(): Fence[] {
    return [...this.held.values()].map((j) => ({ id: j.id, token: j.token }));
  }

  get size(): number {
    return this.held.size;
  }

  done(job: ClaimedJob, runMs: number): void {
    this.queued.doneJobs.push(job);
    this.queued.doneMs.push(runMs);
    this.added(job);
  }

  failed(job: ClaimedJob, f: Failure): void {
    const q = this.queued;
    q.failedJobs.push(job);
    q.failedMs.push(f.runMs);
    q.errors.push(clean(f.error));
    q.permanent.push(f.permanent);
    q.delays.push(f.retryInMs ?? retryDelay(job.attempt, this.settings.backoff));
    this.added(job);
  }

  release(job: ClaimedJob, reason: string): void {
    this.queued.released.push(job);
    this.queued.reasons.push(reason);
    this.added(job);
  }

  private added(job: ClaimedJob): void {
    this.held.set(job.token, job);
    this.schedule();
  }

  /**
   * When to write: one write at a time, like a group commit. Idle, outcomes
   * leave `flushInterval` after the first (or at once at `batchSize`), so a lone
   * job is recorded within milliseconds. While a write is in flight they gather
   * and leave together the moment it returns. Writing every 2 ms with two
   * writes in flight made three supervisors on two cores send batches of about
   * fifteen, and PostgreSQL spent more on each statement's planning and commit
   * than on its rows; one write in flight also measured 5-7 % more jobs/s for a
   * single supervisor (fewer busy backends on the same cores).
   */
  private schedule(): void {
    // While stopping, flush() writes whatever is queued.
    if (this.stopped || this.writing || this.queued.size === 0) return;
    if (this.retryDelayMs === 0 && this.queued.size >= this.settings.completer.batchSize) {
      this.writeNow();
      return;
    }
    this.timer ??= setTimeout(
      () => {
        this.timer = undefined;
        if (!this.writing) this.write();
      },
      this.retryDelayMs > 0 ? this.retryDelayMs : this.settings.completer.flushInterval,
    );
  }

  private writeNow(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.write();
  }

  private write(): void {
    const batch = this.queued;
    this.queued = new Batch();
    this.writing = this.writeBatch(batch).finally(() => {
      this.writing = undefined;
      if (this.stopped) return;
      // What gathered meanwhile leaves now (after a failed write: after the retry delay).
      if (this.queued.size > 0 && this.retryDelayMs === 0) this.writeNow();
      else this.schedule();
    });
  }

  private async writeBatch(batch: Batch): Promise<void> {
    const [done, failed, released] = await Promise.allSettled([
      this.writeDone(batch),
      this.writeFailed(batch),
      this.writeReleased(batch),
    ]);
    const error = [done, failed, released].find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (error) {
      // Nothing of a failed statement was written: keep its outcomes and try again.
      this.queued.restore(batch, {
        done: done.status === 'rejected',
        failed: failed.status === 'rejected',
        released: released.status === 'rejected',
      });
      this.retryDelayMs = Math.min(5000, Math.max(50, this.retryDelayMs * 2));
      this.events.emit('db:error', { loop: 'completer', err: error.reason });
    } else {
      this.retryDelayMs = 0;
    }
  }

  private async writeDone(batch: Batch): Promise<void> {
    const jobs = batch.doneJobs;
    if (jobs.length === 0) return;
    const fenced = await completeJobs(
      this.store,
      this.owner,
      jobs.map((j) => j.id),
      jobs.map((j) => j.token),
    );
    for (const j of jobs) this.held.delete(j.token);
    if (fenced.size === 0) {
      this.events.emit('job:completed', { jobs, runMs: batch.doneMs });
      return;
    }
    const written: JobRef[] = [];
    const ms: number[] = [];
    jobs.forEach((j, i) => {
      if (fenced.has(j.id)) return;
      written.push(j);
      ms.push(batch.doneMs[i] as number);
    });
    if (written.length) this.events.emit('job:completed', { jobs: written, runMs: ms });
    this.events.emit('job:fenced', { jobs: jobs.filter((j) => fenced.has(j.id)) });
  }

  private async writeFailed(batch: Batch): Promise<void> {
    const jobs = batch.failedJobs;
    if (jobs.length === 0) return;
    const rows = await failJobs(this.store, this.owner, {
      ids: jobs.map((j) => j.id),
      tokens: jobs.map((j) => j.token),
      permanent: batch.permanent,
      delaysMs: batch.delays,
      errors: batch.errors,
    });
    const status = new Map(rows.map((r) => [r.id, r.status]));
    const retried = { jobs: [] as JobRef[], runMs: [] as number[], errors: [] as string[] };
    const dead = { jobs: [] as JobRef[], runMs: [] as number[], errors: [] as string[] };
    const fenced: JobRef[] = [];
    jobs.forEach((j, i) => {
      this.held.delete(j.token);
      const s = status.get(j.id);
      const into = s === 'pending' ? retried : s === 'failed' ? dead : undefined;
      if (!into) {
        fenced.push(j);
        return;
      }
      into.jobs.push(j);
      into.runMs.push(batch.failedMs[i] as number);
      into.errors.push(batch.errors[i] as string);
    });
    if (retried.jobs.length) this.events.emit('job:retried', retried);
    if (dead.jobs.length) this.events.emit('job:dead', dead);
    if (fenced.length) this.events.emit('job:fenced', { jobs: fenced });
  }

  private async writeReleased(batch: Batch): Promise<void> {
    const jobs = batch.released;
    if (jobs.length === 0) return;
    const written = new Set(
      await releaseJobs(
        this.store,
        this.owner,
        jobs.map((j) => ({ id: j.id, token: j.token })),
      ),
    );
    const byReason = new Map<string, JobRef[]>();
    jobs.forEach((j, i) => {
      this.held.delete(j.token);
      if (!written.has(j.id)) return;
      const reason = batch.reasons[i] as string;
      const list = byReason.get(reason) ?? [];
      list.push(j);
      byReason.set(reason, list);
    });
    for (const [reason, refs] of byReason) this.events.emit('job:released', { jobs: refs, reason });
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
      await this.writing;
      if (this.queued.size === 0) return;
      if (this.retryDelayMs > 0)
        await new Promise((r) => setTimeout(r, Math.min(this.retryDelayMs, Math.max(0, deadline - Date.now()))));
      this.write();
    }
  }
}

/** last_error text: bounded, no NUL (PostgreSQL text cannot hold it). */
function clean(error: string): string {
  const text = error.replaceAll('\u0000', '\\0');
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}… (truncated)` : text;
}
