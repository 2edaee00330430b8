/**
 * The outcomes of batch calls: every outcome of one call is written in one
 * transaction, so a call's jobs are recorded together or not at all (a
 * supervisor killed mid-write leaves all of them to the reaper, none half
 * recorded). Inside it each meaning has its ordinary writer and statement
 * (done.ts, failed.ts, released.ts, snoozed.ts), each row fenced by its own
 * claim: a job whose claim was lost is refused alone, its neighbours written.
 * Events and settled() wait for the COMMIT.
 *
 * Calls queued together share a transaction while they hold at most
 * `maxRows` jobs (completer.batchSize); a call larger than that is written
 * alone, whole. An error that says nothing about the rows (keepsBatch) keeps
 * the calls for the next write; any other error (a row the database refuses)
 * hands each outcome of the failed transaction back to the completer's
 * ordinary batches, which split around the bad row (split_write.ts): those
 * are written one meaning at a time, no longer together.
 */
import type { ClaimedJob, JobRef } from '../../queue/types.ts';
import { SupervisorEvents, type Events } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import type { BatchContext } from './outcome_batch.ts';
import type { CallEntry, Recorded } from './outcome.ts';
import { keepsBatch } from './split_write.ts';
import type { OutcomeOf, OutcomeWriter, Rows, WriteContext } from './writer.ts';

/** The writer of each meaning. */
export interface CallWriters {
  done: OutcomeWriter<Rows, OutcomeOf<'done'>>;
  failed: OutcomeWriter<Rows, OutcomeOf<'retry' | 'dead'>>;
  released: OutcomeWriter<Rows, OutcomeOf<'release'>>;
  snoozed: OutcomeWriter<Rows, OutcomeOf<'snooze'>>;
}

export class CallBatch {
  private queued: CallEntry[][] = [];
  private jobs = 0;

  constructor(
    private readonly writers: CallWriters,
    /** Where an outcome goes when its call's transaction was refused: the ordinary batches. */
    private readonly alone: (job: ClaimedJob, outcome: Recorded) => void,
  ) {}

  /** Jobs queued. */
  get size(): number {
    return this.jobs;
  }

  add(entries: CallEntry[]): void {
    this.queued.push(entries);
    this.jobs += entries.length;
  }

  /** Writes every call queued now. Never throws; @returns the retryable error that kept calls queued. */
  async write(c: BatchContext): Promise<unknown> {
    const calls = this.queued;
    this.queued = [];
    this.jobs = 0;
    let i = 0;
    while (i < calls.length) {
      const group: CallEntry[][] = [];
      let rows = 0;
      while (i < calls.length && (group.length === 0 || rows + (calls[i] as CallEntry[]).length <= c.maxRows)) {
        const call = calls[i++] as CallEntry[];
        group.push(call);
        rows += call.length;
      }
      try {
        await this.writeTogether(c, group.flat());
      } catch (err) {
        if (keepsBatch(err)) {
          for (const call of [...group, ...calls.slice(i)]) this.add(call);
          return err;
        }
        c.failed(err);
        for (const { job, outcome } of group.flat()) this.alone(job, outcome);
      }
    }
    return undefined;
  }

  /** One transaction: each meaning's rows through its writer; events and settled() after the COMMIT. */
  private async writeTogether(c: BatchContext, entries: CallEntry[]): Promise<void> {
    const w = this.writers;
    const parts = [
      { writer: w.done, rows: w.done.rows() },
      { writer: w.failed, rows: w.failed.rows() },
      { writer: w.released, rows: w.released.rows() },
      { writer: w.snoozed, rows: w.snoozed.rows() },
    ] as Array<{ writer: OutcomeWriter<Rows, Recorded>; rows: Rows }>;
    for (const { job, outcome } of entries) {
      const t = outcome.type;
      const part = parts[t === 'done' ? 0 : t === 'retry' || t === 'dead' ? 1 : t === 'release' ? 2 : 3];
      part?.writer.add(part.rows, job, outcome);
    }
    const held = deferred();
    const writeAll = async (store: WriteContext['store']) => {
      const cx: WriteContext = {
        store,
        events: held.events,
        settled: (job) => held.settled.push(job),
        fenced: (jobs) => held.fenced.push(...jobs),
      };
      for (const { writer, rows } of parts) if (rows.jobs.length > 0) await writer.write(cx, rows, 0, rows.jobs.length);
    };
    if (c.store.together) await c.store.together(writeAll);
    else await writeAll(c.store);
    for (const job of held.settled) c.settled(job);
    for (const [name, args] of held.emitted) safeEmit(c.events, name, ...args);
    if (held.fenced.length > 0) c.fenced(held.fenced);
  }
}

/** Events and settled claims held back until the transaction has committed. */
function deferred() {
  const emitted: Array<[keyof Events, Events[keyof Events]]> = [];
  const events = new SupervisorEvents();
  const record = (name: keyof Events, ...args: Events[keyof Events]): boolean => {
    emitted.push([name, args]);
    return true;
  };
  events.emit = record;
  return { events, emitted, settled: [] as ClaimedJob[], fenced: [] as JobRef[] };
}
