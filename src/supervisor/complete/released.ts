/**
 * Released runs: handed back to pending without using their attempt
 * (queue/complete.ts releaseJobs): jobs claimed but not started at shutdown or
 * a pause, runs aborted by shutdown, runs whose thread was killed to stop
 * another. Then 'job:released' once per reason; a fenced-off claim emits
 * nothing (handing back is this supervisor leaving, not the job's outcome).
 */
import type { ClaimedJob } from '../../queue/types.ts';
import { refOf, type JobRef } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import type { OutcomeOf, OutcomeWriter, Rows } from './writer.ts';

export interface ReleasedRows extends Rows {
  reasons: string[];
}

export const releasedWriter: OutcomeWriter<ReleasedRows, OutcomeOf<'release'>> = {
  rows: () => ({ jobs: [], runMs: [], reasons: [] }),

  add(rows, job, outcome) {
    rows.jobs.push(job);
    rows.runMs.push(0);
    rows.reasons.push(outcome.reason);
  },

  copy(to, from, i) {
    to.jobs.push(from.jobs[i] as ClaimedJob);
    to.runMs.push(0);
    to.reasons.push(from.reasons[i] as string);
  },

  describe: () => 'handing the job back',

  async write(c, rows, lo, hi) {
    const jobs = rows.jobs.slice(lo, hi);
    const written = new Set(await c.store.release(jobs.map((j) => ({ id: j.id, token: j.token }))));
    const byReason = new Map<string, JobRef[]>();
    jobs.forEach((j, i) => {
      c.settled(j);
      if (!written.has(j.id)) return;
      const reason = rows.reasons[lo + i] as string;
      const list = byReason.get(reason) ?? [];
      list.push(refOf(j));
      byReason.set(reason, list);
    });
    for (const [reason, refs] of byReason) safeEmit(c.events, 'job:released', { jobs: refs, reason });
  },
};
