/**
 * Failed runs: each a retry at now + its delay, or a dead letter when
 * permanent or out of attempts, decided by the database with the row's
 * current max_attempts (queue/complete.ts failJobs); then 'job:retried' or
 * 'job:dead', and 'job:fenced' for claims this supervisor no longer held.
 */
import type { ClaimedJob } from '../../queue/types.ts';
import { clampDelay, retryDelay, type BackoffSettings } from '../backoff.ts';
import { refOf, type JobRef } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import { clean } from './error_text.ts';
import type { OutcomeOf, OutcomeWriter, Rows } from './writer.ts';

export interface FailedRows extends Rows {
  errors: string[];
  /** Each failure's stack frames (null: none). */
  stacks: Array<string | null>;
  permanent: boolean[];
  /** The retry delay: the task's retryInMs, else the backoff of its attempt. */
  delays: number[];
}

interface Reported {
  jobs: JobRef[];
  runMs: number[];
  errors: string[];
  stacks: Array<string | null>;
}

/** The failed writer, with the backoff that sets a retry's delay when the task named none. */
export function failedWriter(backoff: BackoffSettings): OutcomeWriter<FailedRows, OutcomeOf<'retry' | 'dead'>> {
  return {
    rows: () => ({ jobs: [], runMs: [], errors: [], stacks: [], permanent: [], delays: [] }),

    add(rows, job, { failure: f }) {
      rows.jobs.push(job);
      rows.runMs.push(f.runMs);
      rows.errors.push(clean(f.error));
      rows.stacks.push(f.stack === undefined ? null : clean(f.stack));
      rows.permanent.push(f.permanent);
      rows.delays.push(clampDelay(f.retryInMs ?? retryDelay(job.attempt, backoff)));
    },

    copy(to, from, i) {
      to.jobs.push(from.jobs[i] as ClaimedJob);
      to.runMs.push(from.runMs[i] as number);
      to.errors.push(from.errors[i] as string);
      to.stacks.push(from.stacks[i] ?? null);
      to.permanent.push(from.permanent[i] as boolean);
      to.delays.push(from.delays[i] as number);
    },

    describe: (rows, i) => `the job failed (${rows.errors[i]}), and recording that`,

    async write(c, rows, lo, hi) {
      const jobs = rows.jobs.slice(lo, hi);
      const errors = rows.errors.slice(lo, hi);
      const stacks = rows.stacks.slice(lo, hi);
      const written = await c.store.fail({
        ids: jobs.map((j) => j.id),
        tokens: jobs.map((j) => j.token),
        permanent: rows.permanent.slice(lo, hi),
        delaysMs: rows.delays.slice(lo, hi),
        errors,
        stacks,
      });
      const status = new Map(written.map((r) => [r.id, r.status]));
      const retried: Reported = { jobs: [], runMs: [], errors: [], stacks: [] };
      const dead: Reported = { jobs: [], runMs: [], errors: [], stacks: [] };
      const fenced: JobRef[] = [];
      jobs.forEach((j, i) => {
        c.settled(j);
        const s = status.get(j.id);
        const into = s === 'pending' ? retried : s === 'failed' ? dead : undefined;
        if (!into) {
          fenced.push(refOf(j));
          return;
        }
        into.jobs.push(refOf(j));
        into.runMs.push(rows.runMs[lo + i] as number);
        into.errors.push(errors[i] as string);
        into.stacks.push(stacks[i] ?? null);
      });
      if (retried.jobs.length) safeEmit(c.events, 'job:retried', retried);
      if (dead.jobs.length) safeEmit(c.events, 'job:dead', dead);
      if (fenced.length) c.fenced(fenced);
    },
  };
}
