/**
 * Snoozed runs: back to pending after their delay without using an attempt,
 * or dead-lettered past jobs.maxSnoozes (queue/snooze.ts); then 'job:snoozed'
 * or 'job:dead', and 'job:fenced' for claims this supervisor no longer held.
 */
import type { ClaimedJob } from '../../queue/types.ts';
import { clampDelay } from '../backoff.ts';
import { refOf, type JobRef } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import type { OutcomeOf, OutcomeWriter, Rows } from './writer.ts';

export interface SnoozedRows extends Rows {
  delays: number[];
}

export const snoozedWriter: OutcomeWriter<SnoozedRows, OutcomeOf<'snooze'>> = {
  rows: () => ({ jobs: [], runMs: [], delays: [] }),

  add(rows, job, outcome) {
    rows.jobs.push(job);
    rows.runMs.push(outcome.runMs);
    rows.delays.push(clampDelay(outcome.delayMs));
  },

  copy(to, from, i) {
    to.jobs.push(from.jobs[i] as ClaimedJob);
    to.runMs.push(from.runMs[i] as number);
    to.delays.push(from.delays[i] as number);
  },

  describe: () => 'the job snoozed, and recording that',

  async write(c, rows, lo, hi) {
    const jobs = rows.jobs.slice(lo, hi);
    const delaysMs = rows.delays.slice(lo, hi);
    const written = await c.store.snooze({ ids: jobs.map((j) => j.id), tokens: jobs.map((j) => j.token), delaysMs });
    const byId = new Map(written.map((r) => [r.id, r]));
    const snoozed = { jobs: [] as JobRef[], runMs: [] as number[], delaysMs: [] as number[] };
    const dead = { jobs: [] as JobRef[], runMs: [] as number[], errors: [] as string[] };
    const fenced: JobRef[] = [];
    jobs.forEach((j, i) => {
      c.settled(j);
      const row = byId.get(j.id);
      const runMs = rows.runMs[lo + i] as number;
      if (row?.status === 'pending') {
        snoozed.jobs.push(refOf(j));
        snoozed.runMs.push(runMs);
        snoozed.delaysMs.push(delaysMs[i] as number);
      } else if (row?.status === 'failed') {
        dead.jobs.push(refOf(j));
        dead.runMs.push(runMs);
        dead.errors.push(row.error ?? 'TooManySnoozes');
      } else fenced.push(refOf(j));
    });
    if (snoozed.jobs.length) safeEmit(c.events, 'job:snoozed', snoozed);
    if (dead.jobs.length) safeEmit(c.events, 'job:dead', dead);
    if (fenced.length) c.fenced(fenced);
  },
};
