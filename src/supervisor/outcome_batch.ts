/**
 * Outcomes waiting to be written, as parallel arrays: at tens of thousands of
 * jobs per second an object per outcome is measurable garbage-collector time.
 * `take*` copies one outcome from another batch (a write that must be retried).
 */
import type { ClaimedJob } from '../queue/types.ts';
import type { Report } from './dispatch/sink.ts';

export class OutcomeBatch {
  doneJobs: ClaimedJob[] = [];
  doneMs: number[] = [];
  /**
   * What each done run reported, aligned with doneJobs; made only once some
   * run in the batch reported something, so a batch of tasks that return
   * nothing costs nothing.
   */
  doneReports?: Array<Report | null>;
  failedJobs: ClaimedJob[] = [];
  failedMs: number[] = [];
  errors: string[] = [];
  /** Each failure's stack frames (null: none), aligned with failedJobs. */
  stacks: Array<string | null> = [];
  permanent: boolean[] = [];
  delays: number[] = [];
  released: ClaimedJob[] = [];
  reasons: string[] = [];
  snoozedJobs: ClaimedJob[] = [];
  snoozedMs: number[] = [];
  snoozeDelays: number[] = [];

  get size(): number {
    return this.doneJobs.length + this.failedJobs.length + this.released.length + this.snoozedJobs.length;
  }

  addDone(job: ClaimedJob, runMs: number, report: Report | undefined): void {
    const i = this.doneJobs.push(job) - 1;
    this.doneMs.push(runMs);
    if (report) (this.doneReports ??= new Array<Report | null>(i).fill(null)).push(report);
    else this.doneReports?.push(null);
  }

  takeDone(from: OutcomeBatch, i: number): void {
    this.addDone(from.doneJobs[i] as ClaimedJob, from.doneMs[i] as number, from.doneReports?.[i] ?? undefined);
  }

  takeSnoozed(from: OutcomeBatch, i: number): void {
    this.snoozedJobs.push(from.snoozedJobs[i] as ClaimedJob);
    this.snoozedMs.push(from.snoozedMs[i] as number);
    this.snoozeDelays.push(from.snoozeDelays[i] as number);
  }

  takeFailed(from: OutcomeBatch, i: number): void {
    this.failedJobs.push(from.failedJobs[i] as ClaimedJob);
    this.failedMs.push(from.failedMs[i] as number);
    this.errors.push(from.errors[i] as string);
    this.stacks.push(from.stacks[i] ?? null);
    this.permanent.push(from.permanent[i] as boolean);
    this.delays.push(from.delays[i] as number);
  }

  takeReleased(from: OutcomeBatch, i: number): void {
    this.released.push(from.released[i] as ClaimedJob);
    this.reasons.push(from.reasons[i] as string);
  }
}
