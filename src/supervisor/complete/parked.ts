/**
 * Parked runs: tasks that slept (ctx.sleep) or waited (ctx.waitFor). Sleeps
 * go back to pending at their wake time (queue/sleep.ts), waits to `waiting`
 * until their signal or deadline, or straight back to pending when their
 * signal is already there (queue/wait.ts); neither uses an attempt or a
 * snooze. Then 'job:slept' or 'job:waiting', and 'job:fenced' for claims this
 * supervisor no longer held.
 */
import type { ClaimedJob } from '../../queue/types.ts';
import type { Park } from '../../worker/protocol.ts';
import type { JobRef } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import type { OutcomeOf, OutcomeWriter, Rows, WriteContext } from './writer.ts';

export interface ParkedRows extends Rows {
  parks: Park[];
}

type Written = Array<{ id: string; wakeMs: number }>;

function parkedWriter<T extends 'sleep' | 'wait'>(
  kind: T,
  store: (c: WriteContext, jobs: ClaimedJob[], parks: Park[]) => Promise<Written>,
  report: (c: WriteContext, jobs: JobRef[], runMs: number[], wakesMs: number[]) => void,
): OutcomeWriter<ParkedRows, OutcomeOf<'sleep' | 'wait'>> {
  return {
    rows: () => ({ jobs: [], runMs: [], parks: [] }),

    add(rows, job, outcome) {
      rows.jobs.push(job);
      rows.runMs.push(outcome.runMs);
      rows.parks.push(outcome.park);
    },

    copy(to, from, i) {
      to.jobs.push(from.jobs[i] as ClaimedJob);
      to.runMs.push(from.runMs[i] as number);
      to.parks.push(from.parks[i] as Park);
    },

    describe: (rows, i) =>
      kind === 'sleep'
        ? `the job slept at "${rows.parks[i]?.name}", and recording that`
        : `the job waited for signal "${rows.parks[i]?.name}", and recording that`,

    async write(c, rows, lo, hi) {
      const jobs = rows.jobs.slice(lo, hi);
      const written = new Map((await store(c, jobs, rows.parks.slice(lo, hi))).map((r) => [r.id, r.wakeMs]));
      const done = { jobs: [] as JobRef[], runMs: [] as number[], wakesMs: [] as number[] };
      const fenced: JobRef[] = [];
      jobs.forEach((j, i) => {
        c.settled(j);
        const wakeMs = written.get(j.id);
        if (wakeMs === undefined) return void fenced.push(j);
        done.jobs.push(j);
        done.runMs.push(rows.runMs[lo + i] as number);
        done.wakesMs.push(wakeMs);
      });
      if (done.jobs.length) report(c, done.jobs, done.runMs, done.wakesMs);
      if (fenced.length) c.fenced(fenced);
    },
  };
}

const fences = (jobs: ClaimedJob[]) => ({ ids: jobs.map((j) => j.id), tokens: jobs.map((j) => j.token) });

export const sleptWriter = parkedWriter(
  'sleep',
  (c, jobs, parks) =>
    c.store.sleep({
      ...fences(jobs),
      names: parks.map((p) => p.name),
      untilMs: parks.map((p) => p.untilMs),
      delaysMs: parks.map((p) => p.delayMs),
    }),
  (c, jobs, runMs, wakesMs) => safeEmit(c.events, 'job:slept', { jobs, runMs, wakesMs }),
);

export const waitedWriter = parkedWriter(
  'wait',
  async (c, jobs, parks) =>
    (
      await c.store.park({
        ...fences(jobs),
        names: parks.map((p) => p.name),
        untilMs: parks.map((p) => p.untilMs),
        timeoutsMs: parks.map((p) => p.delayMs),
      })
    ).map((r) => ({ id: r.id, wakeMs: r.deadlineMs })),
  (c, jobs, runMs, wakesMs) => safeEmit(c.events, 'job:waiting', { jobs, runMs, deadlinesMs: wakesMs }),
);
