/**
 * Done runs: marked done (queue/complete.ts completeJobs) with what they
 * reported, then 'job:completed'; 'job:fenced' for claims this supervisor no
 * longer held.
 */
import type { Reports } from '../../queue/complete.ts';
import type { ClaimedJob } from '../../queue/types.ts';
import { refOf, type JobRef } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import type { Report } from './outcome.ts';
import type { OutcomeOf, OutcomeWriter, Rows } from './writer.ts';

export interface DoneRows extends Rows {
  /**
   * What each run reported, aligned with jobs; made only once some run in the
   * batch reported something, so a batch of tasks that return nothing costs nothing.
   */
  reports?: Array<Report | null>;
}

function push(rows: DoneRows, job: ClaimedJob, runMs: number, report: Report | undefined): void {
  const i = rows.jobs.push(job) - 1;
  rows.runMs.push(runMs);
  if (report) (rows.reports ??= new Array<Report | null>(i).fill(null)).push(report);
  else rows.reports?.push(null);
}

export const doneWriter: OutcomeWriter<DoneRows, OutcomeOf<'done'>> = {
  rows: () => ({ jobs: [], runMs: [] }),
  add: (rows, job, outcome) => push(rows, job, outcome.runMs, outcome.report),
  copy: (to, from, i) => push(to, from.jobs[i] as ClaimedJob, from.runMs[i] as number, from.reports?.[i] ?? undefined),
  describe: () => 'the job succeeded, but marking it done',

  async write(c, rows, lo, hi) {
    const jobs = rows.jobs.slice(lo, hi);
    const runMs = rows.runMs.slice(lo, hi);
    const fenced = await c.store.complete(
      jobs.map((j) => j.id),
      jobs.map((j) => j.token),
      reportsOf(rows.reports?.slice(lo, hi)),
    );
    for (const j of jobs) c.settled(j);
    if (fenced.size === 0) {
      safeEmit(c.events, 'job:completed', { jobs: jobs.map(refOf), runMs });
      return;
    }
    const written: JobRef[] = [];
    const ms: number[] = [];
    jobs.forEach((j, i) => {
      if (fenced.has(j.id)) return;
      written.push(refOf(j));
      ms.push(runMs[i] as number);
    });
    if (written.length) safeEmit(c.events, 'job:completed', { jobs: written, runMs: ms });
    c.fenced(jobs.filter((j) => fenced.has(j.id)).map(refOf));
  },
};

/** The reports of a slice of done runs, or undefined when none of them reported anything. */
function reportsOf(reports: Array<Report | null> | undefined): Reports | undefined {
  if (!reports?.some((r) => r !== null)) return undefined;
  return {
    results: reports.map((r) => r?.result ?? null),
    progress: reports.map((r) => r?.progress ?? null),
  };
}
