/**
 * The progress writer: running jobs' ctx.progress() values in, one fenced
 * batch write out (queue/progress.ts), one write in flight at a time.
 *
 * The worker thread already throttles each job to one value a second, so this
 * only gathers what arrives meanwhile (the newest value per claim wins) and
 * writes it. Progress is best effort: a failed write is reported as 'db:error'
 * and dropped, never retried or allowed to hold anything up; the job's next
 * value, or its `done` write (which carries the last value), supersedes it.
 * Nothing here ever blocks a task or throws into the dispatcher.
 */
import { writeProgress } from '../queue/progress.ts';
import type { Store } from '../queue/sql.ts';
import type { ClaimedJob } from '../queue/types.ts';
import type { SupervisorEvents } from './events.ts';
import { safeEmit } from './safe_emit.ts';

export class ProgressWriter {
  /** By claim token: the newest value not yet written. */
  private queued = new Map<string, { job: ClaimedJob; json: string }>();
  private writing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly owner: string,
    private readonly events: SupervisorEvents,
  ) {}

  /** Queues `json` as the progress of `job`'s claim. */
  report(job: ClaimedJob, json: string): void {
    if (this.stopped) return;
    this.queued.set(job.token, { job, json });
    if (!this.writing) this.writing = this.write();
  }

  private async write(): Promise<void> {
    // Let the rest of this turn's values join the batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queued.size > 0 && !this.stopped) {
      const batch = [...this.queued.values()];
      this.queued = new Map();
      try {
        await writeProgress(
          this.store,
          this.owner,
          batch.map((b) => b.job.id),
          batch.map((b) => b.job.token),
          batch.map((b) => b.json),
        );
      } catch (err) {
        safeEmit(this.events, 'db:error', { loop: 'progress', err });
      }
    }
    this.writing = undefined;
  }

  /** Drops what is queued and waits for the write in flight. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queued.clear();
    await this.writing;
  }
}
