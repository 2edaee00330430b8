/**
 * The completer: outcomes in, batched fenced writes out.
 *
 * One way in: record(job, outcome), called by the dispatcher's report path
 * only (and recordCall for a batch call's outcomes, written in one
 * transaction: complete/call_batch.ts). Each outcome goes to the writer of its meaning (complete/: done,
 * failed for both retry and dead, released, snoozed), each with its own batch
 * (complete/outcome_batch.ts); sleeps and waits go to the parked writers. Outcomes wait at most `flushIntervalMs` (or
 * until `batchSize` are queued) and are written per writer in statements of at
 * most `batchSize` rows, one write in flight at a time. Outcomes that gathered
 * during a long write leave together when it returns, still cut into
 * statements of `batchSize`: a statement of 5,000 rows would hold its row
 * locks and its share of the WAL flush longer than a user who set the limit
 * asked for. Until its outcome is written a job stays in `fences()`, so the
 * heartbeat keeps its lease.
 *
 * A failed write is classified with keepsBatch (complete/split_write.ts): an
 * error that says nothing about the rows keeps the unwritten outcomes and
 * tries them again after a growing delay; any other error splits the batch
 * until the one row that fails is alone, and that row is dead-lettered by
 * itself. Rows the database refuses through the fence (this supervisor no
 * longer holds that claim) are reported, never forced. Events go out after the
 * write, through safeEmit, so a throwing listener cannot make a written
 * outcome look unwritten.
 */
import type { Settings } from '../config/index.ts';
import type { ClaimedJob, Fence } from '../queue/types.ts';
import { CallBatch } from './complete/call_batch.ts';
import { doneWriter } from './complete/done.ts';
import { failedWriter, type FailedRows } from './complete/failed.ts';
import type { CallEntry, OutcomeSink, Recorded } from './complete/outcome.ts';
import { OutcomeBatch, type BatchContext } from './complete/outcome_batch.ts';
import { sleptWriter, waitedWriter } from './complete/parked.ts';
import { releasedWriter } from './complete/released.ts';
import { snoozedWriter } from './complete/snoozed.ts';
import type { OutcomeStore } from './complete/store.ts';
import type { OutcomeOf } from './complete/writer.ts';
import type { SupervisorEvents } from './events.ts';
import { NO_HOOKS, reportDbError, type Hooks } from './hooks.ts';
import { safeEmit } from './safe_emit.ts';

export class Completer implements OutcomeSink {
  private readonly done = new OutcomeBatch(doneWriter);
  private readonly failed: OutcomeBatch<FailedRows, OutcomeOf<'retry' | 'dead'>>;
  private readonly released = new OutcomeBatch(releasedWriter);
  private readonly snoozed = new OutcomeBatch(snoozedWriter);
  private readonly slept = new OutcomeBatch(sleptWriter);
  private readonly waited = new OutcomeBatch(waitedWriter);
  private readonly calls: CallBatch;
  /** Every writer's batch: written together, in this order. */
  private readonly batches: ReadonlyArray<{ readonly size: number; write(c: BatchContext): Promise<unknown> }>;
  private readonly context: BatchContext;
  /** The write in flight, if any. */
  private writing: Promise<void> | undefined;
  /** By claim token. */
  private readonly held = new Map<string, ClaimedJob>();
  private timer: NodeJS.Timeout | undefined;
  private retryDelayMs = 0;
  private stopped = false;

  constructor(
    store: OutcomeStore,
    private readonly settings: Pick<Settings, 'backoff' | 'completer'>,
    private readonly events: SupervisorEvents,
    private readonly hooks: Hooks = NO_HOOKS,
  ) {
    const failed = failedWriter(settings.backoff);
    this.failed = new OutcomeBatch(failed);
    const writers = { done: doneWriter, failed, released: releasedWriter, snoozed: snoozedWriter };
    this.calls = new CallBatch(writers, (job, outcome) => this.record(job, outcome));
    this.batches = [this.done, this.failed, this.released, this.snoozed, this.slept, this.waited, this.calls];
    this.context = {
      store,
      events,
      maxRows: settings.completer.batchSize,
      settled: (job) => {
        this.held.delete(job.token);
        hooks.outcomeSettled(job);
      },
      fenced: (jobs) => {
        hooks.lostRunsEnded(jobs);
        safeEmit(events, 'job:fenced', { jobs });
      },
      failed: (err) => reportDbError(hooks, events, 'completer', err),
    };
  }

  /** Claims whose outcome is not yet written: the heartbeat keeps their leases. */
  fences(): Fence[] {
    return [...this.held.values()].map((j) => ({ id: j.id, token: j.token }));
  }

  get size(): number {
    return this.held.size;
  }

  /**
   * Jobs of `queue` whose outcome is recorded and not yet written: their runs
   * have ended (a limited queue's claim may lend their slots, claim/transfers.ts).
   */
  unwritten(queue: string): ClaimedJob[] {
    const jobs: ClaimedJob[] = [];
    for (const job of this.held.values()) if (job.queue === queue) jobs.push(job);
    return jobs;
  }

  /** Queues the outcome with the writer of its meaning. */
  record(job: ClaimedJob, outcome: Recorded): void {
    switch (outcome.type) {
      case 'done':
        this.done.add(job, outcome);
        break;
      case 'retry':
      case 'dead':
        this.failed.add(job, outcome);
        break;
      case 'release':
        this.released.add(job, outcome);
        break;
      case 'snooze':
        this.snoozed.add(job, outcome);
        break;
      case 'sleep':
        this.slept.add(job, outcome);
        break;
      case 'wait':
        this.waited.add(job, outcome);
        break;
    }
    this.held.set(job.token, job);
    this.schedule();
  }

  /** A batch call's outcomes, written together (complete/call_batch.ts). */
  recordCall(entries: CallEntry[]): void {
    this.calls.add(entries);
    for (const { job } of entries) this.held.set(job.token, job);
    this.schedule();
  }

  private get queued(): number {
    return this.batches.reduce((n, b) => n + b.size, 0);
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
    if (this.stopped || this.writing || this.queued === 0) return;
    if (this.retryDelayMs === 0 && this.queued >= this.settings.completer.batchSize) {
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
    this.writing = this.writeAll().finally(() => {
      this.writing = undefined;
      if (this.stopped) return;
      // What gathered meanwhile leaves now (after a failed write: after the retry delay).
      if (this.queued > 0 && this.retryDelayMs === 0) this.writeNow();
      else this.schedule();
    });
  }

  /** Every writer's queued rows, written side by side; a retryable error slows the next write down. */
  private async writeAll(): Promise<void> {
    const errors = await Promise.all(this.batches.map((b) => b.write(this.context)));
    const retryError = errors.find((err) => err !== undefined);
    if (retryError !== undefined) {
      this.retryDelayMs = Math.min(5000, Math.max(50, this.retryDelayMs * 2));
      reportDbError(this.hooks, this.events, 'completer', retryError);
    } else {
      this.retryDelayMs = 0;
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
      await this.writing;
      if (this.queued === 0) return;
      if (this.retryDelayMs > 0)
        await new Promise((r) => setTimeout(r, Math.min(this.retryDelayMs, Math.max(0, deadline - Date.now()))));
      this.write();
    }
  }
}
