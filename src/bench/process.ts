/**
 * Scenario "process": N no-op jobs through one supervisor (in-process) or
 * several (child processes). Supervisors start idle and warmed up by WARM_UP
 * jobs each, the way a supervisor that has been running a while is; the clock
 * starts when the commit of one bulk enqueue returns and stops when all N are
 * recorded done. Every job is claimed with SKIP LOCKED, leased, run on a
 * worker thread and recorded with a fenced write.
 */
import { enqueueMany } from '../queue/enqueue.ts';
import type { Supervisor } from '../supervisor/supervisor.ts';
import type { BenchDatabase } from './database.ts';
import { childSupervisor, inProcessSupervisor, noopJobs, type QueueShape } from './harness.ts';

/**
 * Jobs run before the clock starts. With 200 the first of several runs in one
 * process measured 25-30 % below the rest: the supervisor's code was not yet
 * optimised by V8. 2,000 take a tenth of a second and make every run alike.
 */
export const WARM_UP = 2000;

export interface ProcessResult {
  jobs: number;
  seconds: number;
  jobsPerSec: number;
}

/**
 * Runs `body` on an in-process supervisor warmed up by WARM_UP jobs, and stops
 * it after. `completions(n)` resolves when n more jobs are done; `supervisor`
 * is there for its events.
 */
export async function withWarmSupervisor<T>(
  db: BenchDatabase,
  shape: QueueShape,
  body: (completions: (n: number) => Promise<void>, supervisor: Supervisor) => Promise<T>,
): Promise<T> {
  const { supervisor, completions } = inProcessSupervisor(db.url, shape);
  await supervisor.start();
  try {
    const warm = completions(WARM_UP);
    await enqueueMany(db.pool, noopJobs(WARM_UP));
    await warm;
    return await body(completions, supervisor);
  } finally {
    await supervisor.stop();
  }
}

export async function processInProcess(db: BenchDatabase, jobs: number, shape: QueueShape): Promise<ProcessResult> {
  return withWarmSupervisor(db, shape, async (completions) => {
    const all = completions(jobs);
    await enqueueMany(db.pool, noopJobs(jobs));
    const t0 = performance.now();
    await all;
    const seconds = (performance.now() - t0) / 1000;
    return { jobs, seconds, jobsPerSec: jobs / seconds };
  });
}

export async function processMulti(
  db: BenchDatabase,
  jobs: number,
  processes: number,
  shape: QueueShape,
): Promise<ProcessResult> {
  const children = await Promise.all(Array.from({ length: processes }, () => childSupervisor(db.url, shape)));
  try {
    await enqueueMany(db.pool, noopJobs(WARM_UP * processes));
    await waitAllDone(db, WARM_UP * processes);
    await enqueueMany(db.pool, noopJobs(jobs));
    const t0 = performance.now();
    const seconds = ((await waitAllDone(db, WARM_UP * processes + jobs)) - t0) / 1000;
    return { jobs, seconds, jobsPerSec: jobs / seconds };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}

/**
 * Waits until every job is recorded done. Polls whether any job is still
 * pending or running, which the partial indexes answer at once; counting done
 * rows every few milliseconds cost PostgreSQL more CPU than a supervisor did.
 * Returns when (performance.now()) the poll found none left, which is what a
 * scenario times: the count that then checks all `total` are done reads every
 * kept done row (5 ms for 22,000 on 2 cores), a cost a peer whose done jobs
 * are deleted does not pay, and it is the check, not the work.
 */
export async function waitAllDone(db: BenchDatabase, total: number, pollMs = 5): Promise<number> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const { rows } = await db.pool.query<{
      busy: boolean;
    }>(`SELECT EXISTS (SELECT 1 FROM jobvisor.jobs WHERE status = 'pending')
                                              OR EXISTS (SELECT 1 FROM jobvisor.jobs WHERE status = 'running') AS busy`);
    if (!rows[0]?.busy) break;
    if (Date.now() > deadline) throw new Error(`jobs still pending or running after 10 minutes`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
  const finishedAt = performance.now();
  // With cleanup.retention 0 the done rows are gone: then no row may be left at all.
  const { rows } = await db.pool.query<{ n: number; left: number }>(
    "SELECT count(*) FILTER (WHERE status = 'done')::int AS n, count(*)::int AS left FROM jobvisor.jobs",
  );
  const done = rows[0]?.left === 0 ? total : rows[0]?.n;
  if (done !== total) throw new Error(`${done} of ${total} jobs done; the others failed`);
  return finishedAt;
}
