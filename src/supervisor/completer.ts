/**
 * The completer: outcomes in, batched fenced writes out.
 *
 * Outcomes wait at most `flushIntervalMs` (or until `batchSize` are queued) and
 * are written per kind of write in statements of at most `batchSize` rows, one
 * batch in flight at a time. Outcomes that gathered during a long write leave
 * together when it returns, still cut into statements of `batchSize`: a
 * statement of 5,000 rows would hold its row locks and its share of the WAL
 * flush longer than a user who set the limit asked for. Until its outcome is
 * written a job stays in `fences()`, so the heartbeat keeps its lease.
 *
 * A failed write is classified with keepsBatch (isRetryableDbError, plus
 * overload and statement timeouts): such an error keeps the unwritten outcomes
 * and tries them again after a growing delay; any other error splits the batch until the one row that fails is alone
 * (split_write.ts). That row is dead-lettered by itself with a last_error that
 * says why (queue/fallback.ts) and every other outcome is written normally.
 * Rows the database refuses through the fence (this supervisor no longer holds
 * that claim) are reported, never forced. Events go out after the write,
 * through safeEmit, so a throwing listener cannot make a written outcome look
 * unwritten.
 */
import type { Settings } from '../config/index.ts';
import { completeJobs, releaseJobs, type Reports } from '../queue/complete.ts';
import { deadLetterClaimed } from '../queue/fallback.ts';
import type { Store } from '../queue/sql.ts';
import type { ClaimedJob, Fence } from '../queue/types.ts';
import { clampDelay, retryDelay } from './backoff.ts';
import type { Failure, OutcomeSink, Report } from './dispatch/sink.ts';
import type { JobRef, SupervisorEvents } from './events.ts';
import { OutcomeBatch } from './outcome_batch.ts';
import { safeEmit } from './safe_emit.ts';
import { writeFailed, writeSnoozed, type RequeueWriteContext } from './requeue_writes.ts';
import { writeSplitting, type SplitResult } from './split_write.ts';

const MAX_ERROR_CHARS = 4000;

export class Completer implements OutcomeSink {
  private queued = new OutcomeBatch();
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
    private readonly settings: Pick<Settings, 'backoff' | 'completer'> & { jobs: Pick<Settings['jobs'], 'maxSnoozes'> },
    private readonly events: SupervisorEvents,
  ) {}

  private get writeContext(): RequeueWriteContext {
    const { store, owner, events, held } = this;
    return { store, owner, events, held, maxSnoozes: this.settings.jobs.maxSnoozes };
  }

  /** Claims whose outcome is not yet written: the heartbeat keeps their leases. */
  fences(): Fence[] {
    return [...this.held.values()].map((j) => ({ id: j.id, token: j.token }));
  }

  get size(): number {
    return this.held.size;
  }

  done(job: ClaimedJob, runMs: number, report?: Report): void {
    this.queued.addDone(job, runMs, report);
    this.added(job);
  }

  snoozed(job: ClaimedJob, delayMs: number, runMs: number): void {
    const q = this.queued;
    q.snoozedJobs.push(job);
    q.snoozedMs.push(runMs);
    q.snoozeDelays.push(clampDelay(delayMs));
    this.added(job);
  }

  failed(job: ClaimedJob, f: Failure): void {
    const q = this.queued;
    q.failedJobs.push(job);
    q.failedMs.push(f.runMs);
    q.errors.push(clean(f.error));
    q.stacks.push(f.stack === undefined ? null : clean(f.stack));
    q.permanent.push(f.permanent);
    q.delays.push(clampDelay(f.retryInMs ?? retryDelay(job.attempt, this.settings.backoff)));
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
    this.queued = new OutcomeBatch();
    this.writing = this.writeBatch(batch).finally(() => {
      this.writing = undefined;
      if (this.stopped) return;
      // What gathered meanwhile leaves now (after a failed write: after the retry delay).
      if (this.queued.size > 0 && this.retryDelayMs === 0) this.writeNow();
      else this.schedule();
    });
  }

  private async writeBatch(b: OutcomeBatch): Promise<void> {
    const maxRows = this.settings.completer.batchSize;
    const [done, failed, released, snoozed] = await Promise.all([
      writeSplitting(b.doneJobs.length, {
        maxRows,
        write: (lo, hi) => this.writeDone(b, lo, hi),
        alone: (i, err) =>
          this.alone(b.doneJobs[i] as ClaimedJob, b.doneMs[i] as number, 'the job succeeded, but marking it done', err),
      }),
      writeSplitting(b.failedJobs.length, {
        maxRows,
        write: (lo, hi) => writeFailed(this.writeContext, b, lo, hi),
        alone: (i, err) =>
          this.alone(
            b.failedJobs[i] as ClaimedJob,
            b.failedMs[i] as number,
            `the job failed (${b.errors[i]}), and recording that`,
            err,
          ),
      }),
      writeSplitting(b.released.length, {
        maxRows,
        write: (lo, hi) => this.writeReleased(b, lo, hi),
        alone: (i, err) => this.alone(b.released[i] as ClaimedJob, 0, 'handing the job back', err),
      }),
      writeSplitting(b.snoozedJobs.length, {
        maxRows,
        write: (lo, hi) => writeSnoozed(this.writeContext, b, lo, hi),
        alone: (i, err) =>
          this.alone(
            b.snoozedJobs[i] as ClaimedJob,
            b.snoozedMs[i] as number,
            'the job snoozed, and recording that',
            err,
          ),
      }),
    ]);
    this.settle(done, b.doneJobs, (i) => this.queued.takeDone(b, i));
    this.settle(failed, b.failedJobs, (i) => this.queued.takeFailed(b, i));
    this.settle(released, b.released, (i) => this.queued.takeReleased(b, i));
    this.settle(snoozed, b.snoozedJobs, (i) => this.queued.takeSnoozed(b, i));
    const retryError = done.retryError ?? failed.retryError ?? released.retryError ?? snoozed.retryError;
    if (retryError !== undefined) {
      this.retryDelayMs = Math.min(5000, Math.max(50, this.retryDelayMs * 2));
      safeEmit(this.events, 'db:error', { loop: 'completer', err: retryError });
    } else {
      this.retryDelayMs = 0;
    }
  }

  /**
   * After a split write: unwritten outcomes (connection lost) are queued again;
   * abandoned ones (even the fallback was refused) are let go, so their lease
   * expires and the reaper, which splits the same way, takes them.
   */
  private settle(r: SplitResult, jobs: ClaimedJob[], requeue: (i: number) => void): void {
    for (const i of r.unwritten) requeue(i);
    for (const { index, err } of r.abandoned) {
      this.held.delete((jobs[index] as ClaimedJob).token);
      safeEmit(this.events, 'db:error', { loop: 'completer', err });
    }
  }

  /** The fallback for one outcome its batch could not write: dead-letter it alone. */
  private async alone(job: ClaimedJob, runMs: number, what: string, err: unknown): Promise<void> {
    const error = clean(`${what} failed (${messageOf(err)}), so it was dead-lettered alone`);
    const written = await deadLetterClaimed(this.store, this.owner, job, error);
    this.held.delete(job.token);
    if (written) safeEmit(this.events, 'job:dead', { jobs: [job], runMs: [runMs], errors: [error] });
    else safeEmit(this.events, 'job:fenced', { jobs: [job] });
  }

  private async writeDone(b: OutcomeBatch, lo: number, hi: number): Promise<void> {
    const jobs = b.doneJobs.slice(lo, hi);
    const runMs = b.doneMs.slice(lo, hi);
    const fenced = await completeJobs(
      this.store,
      this.owner,
      jobs.map((j) => j.id),
      jobs.map((j) => j.token),
      null,
      reportsOf(b.doneReports?.slice(lo, hi)),
    );
    for (const j of jobs) this.held.delete(j.token);
    if (fenced.size === 0) {
      safeEmit(this.events, 'job:completed', { jobs, runMs });
      return;
    }
    const written: JobRef[] = [];
    const ms: number[] = [];
    jobs.forEach((j, i) => {
      if (fenced.has(j.id)) return;
      written.push(j);
      ms.push(runMs[i] as number);
    });
    if (written.length) safeEmit(this.events, 'job:completed', { jobs: written, runMs: ms });
    safeEmit(this.events, 'job:fenced', { jobs: jobs.filter((j) => fenced.has(j.id)) });
  }

  private async writeReleased(b: OutcomeBatch, lo: number, hi: number): Promise<void> {
    const jobs = b.released.slice(lo, hi);
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
      const reason = b.reasons[lo + i] as string;
      const list = byReason.get(reason) ?? [];
      list.push(j);
      byReason.set(reason, list);
    });
    for (const [reason, refs] of byReason) safeEmit(this.events, 'job:released', { jobs: refs, reason });
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

/** The reports of a slice of done runs, or undefined when none of them reported anything. */
function reportsOf(reports: Array<Report | null> | undefined): Reports | undefined {
  if (!reports?.some((r) => r !== null)) return undefined;
  return {
    results: reports.map((r) => r?.result ?? null),
    progress: reports.map((r) => r?.progress ?? null),
  };
}

/** last_error text: bounded, no NUL (PostgreSQL text cannot hold it). */
function clean(error: string): string {
  const text = error.replaceAll('\u0000', '\\0');
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}… (truncated)` : text;
}

function messageOf(err: unknown): string {
  const text = (err as { message?: unknown } | undefined)?.message;
  return typeof text === 'string' ? text.slice(0, 500) : 'unknown error';
}
