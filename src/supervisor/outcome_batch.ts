/**
 * Outcomes waiting to be written, as parallel arrays: at tens of thousands of
 * jobs per second an object per outcome is measurable garbage-collector time.
 * `take*` copies one outcome from another batch (a write that must be retried).
 */
import type { ClaimedJob } from '../queue/types.ts';

export class OutcomeBatch {
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

  takeDone(from: OutcomeBatch, i: number): void {
    this.doneJobs.push(from.doneJobs[i] as ClaimedJob);
    this.doneMs.push(from.doneMs[i] as number);
  }

  takeFailed(from: OutcomeBatch, i: number): void {
    this.failedJobs.push(from.failedJobs[i] as ClaimedJob);
    this.failedMs.push(from.failedMs[i] as number);
    this.errors.push(from.errors[i] as string);
    this.permanent.push(from.permanent[i] as boolean);
    this.delays.push(from.delays[i] as number);
  }

  takeReleased(from: OutcomeBatch, i: number): void {
    this.released.push(from.released[i] as ClaimedJob);
    this.reasons.push(from.reasons[i] as string);
  }
}
