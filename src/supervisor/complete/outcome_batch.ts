/**
 * The batching of one writer's outcomes. Rows queue until the completer
 * writes; a write takes every queued row and writes it in statements of at
 * most `maxRows`, split around a row the database refuses (split_write.ts).
 * Rows kept back by a retryable error are queued again; a row refused alone is
 * dead-lettered by itself with a last_error that says why (queue/fallback.ts);
 * a row whose fallback was refused too is let go, so its lease expires and the
 * reaper, which splits the same way, takes it.
 */
import type { ClaimedJob } from '../../queue/types.ts';
import { refOf } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import { clean, shortMessageOf } from './error_text.ts';
import type { Recorded } from './outcome.ts';
import { writeSplitting } from './split_write.ts';
import type { OutcomeWriter, Rows, WriteContext } from './writer.ts';

export interface BatchContext extends WriteContext {
  /** Rows per statement at most (completer.batchSize). */
  maxRows: number;
  /** A write failed: reported as the completer's 'db:error', through the hooks. */
  failed(err: unknown): void;
}

export class OutcomeBatch<R extends Rows, O extends Recorded> {
  private queued: R;

  constructor(private readonly writer: OutcomeWriter<R, O>) {
    this.queued = writer.rows();
  }

  get size(): number {
    return this.queued.jobs.length;
  }

  add(job: ClaimedJob, outcome: O): void {
    this.writer.add(this.queued, job, outcome);
  }

  /**
   * Writes every row queued now (taken at the call, before any await: rows
   * added meanwhile wait for the next write). Never throws.
   * @returns the retryable error that kept rows queued, if one did.
   */
  async write(c: BatchContext): Promise<unknown> {
    const rows = this.queued;
    if (rows.jobs.length === 0) return undefined;
    this.queued = this.writer.rows();
    const { writer } = this;
    const result = await writeSplitting(rows.jobs.length, {
      maxRows: c.maxRows,
      write: (lo, hi) => writer.write(c, rows, lo, hi),
      alone: (i, err) =>
        deadLetterAlone(c, rows.jobs[i] as ClaimedJob, rows.runMs[i] as number, writer.describe(rows, i), err),
    });
    for (const i of result.unwritten) writer.copy(this.queued, rows, i);
    for (const { index, err } of result.abandoned) {
      c.settled(rows.jobs[index] as ClaimedJob);
      c.failed(err);
    }
    return result.retryError;
  }
}

/** The fallback for one outcome its batch could not write: dead-letter it alone. */
async function deadLetterAlone(c: WriteContext, job: ClaimedJob, runMs: number, what: string, err: unknown) {
  const error = clean(`${what} failed (${shortMessageOf(err)}), so it was dead-lettered alone`);
  const written = await c.store.deadLetter(job, error);
  c.settled(job);
  if (written) safeEmit(c.events, 'job:dead', { jobs: [refOf(job)], runMs: [runMs], errors: [error] });
  else c.fenced([refOf(job)]);
}
