/**
 * The durable-step records of the jobs a claim took, read right after it and
 * sent to each run with its job (dispatch/session.ts), for the jobs that have
 * records (jobs.has_steps: a run of it slept, waited or recorded a step).
 *
 * Why: a resumed run needs its records before its first ctx.step, sleep or
 * waitFor. Read by the run (worker/step_reads.ts), that read sat between its
 * start and its first call: one gathered statement per turn of the thread's
 * event loop, which holds at most its `jobsPerThread` runs, so 10,000 waiters
 * signalled in one commit went through it 50 at a time, each batch a round
 * trip before its wait decision. Read here, it is one statement per claim (up
 * to MAX_CLAIM jobs) while the jobs wait for a place, and the run starts with
 * its records (BENCHMARKS.md, "Durable steps").
 *
 * After the claim, not inside it: the claim's UPDATE finds a job that became
 * pending while the statement ran (a signal's commit) with the snapshot of its
 * start, which may miss records committed just before that; this statement's
 * snapshot follows the claim's commit, so it holds every record written
 * before the job was claimed. Nothing else writes a job's records while this
 * supervisor holds its claim: every writer is fenced on the claim's token,
 * which only its run has.
 *
 * A plain job (has_steps null) costs nothing here: no statement when no job of
 * the claim has records. A job whose records are large (CARRIED_STEPS_MAX,
 * CARRIED_STEPS_BYTES) or no longer held, and every job when the read fails,
 * is sent without them: its run reads them itself, as before.
 */
import { loadStepsText } from '../../queue/steps.ts';
import type { Store } from '../../queue/sql.ts';
import type { ClaimedJob } from '../../queue/types.ts';

/**
 * Stored bytes of a job's step results sent with it at most: 8 KiB, so a claim
 * of MAX_CLAIM jobs carries at most about 8 MB of them (a result stored
 * compressed may hold more text, as a payload may: queue/claim.ts).
 */
export const CARRIED_STEPS_BYTES = 8192;

/** Reads the records of `jobs` that have some and sets each one's `steps`; never throws. */
export async function readClaimedSteps(store: Store, jobs: ClaimedJob[]): Promise<void> {
  let resumed: ClaimedJob[] | undefined;
  for (const job of jobs) if (job.hasSteps) (resumed ??= []).push(job);
  if (!resumed) return;
  let rows;
  try {
    rows = await loadStepsText(store, resumed, CARRIED_STEPS_BYTES);
  } catch {
    // The runs read their records themselves, and meet the same database then.
    return;
  }
  const at = performance.now();
  const byId = new Map(resumed.map((j) => [j.id, j]));
  for (const row of rows) {
    const job = byId.get(row.id);
    if (job && row.steps !== null) job.steps = { text: row.steps, nowMs: Number(row.now_ms), at };
  }
}
