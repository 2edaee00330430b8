/**
 * Scenario "process": N no-op jobs through one supervisor (in-process) or
 * several (child processes). Supervisors start idle and warmed up; the clock
 * starts when the commit of one bulk enqueue returns and stops when all N are
 * recorded done. Every job is claimed with SKIP LOCKED, leased, run on a
 * worker thread and recorded with a fenced write.
 */
import { enqueueMany } from '../queue/enqueue.ts';
import type { BenchDatabase } from './database.ts';
import { childSupervisor, inProcessSupervisor, noopJobs, type QueueShape } from './harness.ts';

export interface ProcessResult {
  jobs: number;
  seconds: number;
  jobsPerSec: number;
}

export async function processInProcess(db: BenchDatabase, jobs: number, shape: QueueShape): Promise<ProcessResult> {
  const { supervisor, completions } = inProcessSupervisor(db.url, shape);
  await supervisor.start();
  try {
    const warm = completions(200);
    await enqueueMany(db.pool, noopJobs(200));
    await warm;
    const all = completions(jobs);
    await enqueueMany(db.pool, noopJobs(jobs));
    const t0 = performance.now();
    await all;
    const seconds = (performance.now() - t0) / 1000;
    return { jobs, seconds, jobsPerSec: jobs / seconds };
  } finally {
    await supervisor.stop();
  }
}

export async function processMulti(db: BenchDatabase, jobs: number, processes: number, shape: QueueShape): Promise<ProcessResult> {
  const children = await Promise.all(Array.from({ length: processes }, () => childSupervisor(db.url, shape)));
  try {
    await enqueueMany(db.pool, noopJobs(200 * processes));
    await waitDone(db, 200 * processes);
    await enqueueMany(db.pool, noopJobs(jobs));
    const t0 = performance.now();
    await waitDone(db, 200 * processes + jobs);
    const seconds = (performance.now() - t0) / 1000;
    return { jobs, seconds, jobsPerSec: jobs / seconds };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}

async function waitDone(db: BenchDatabase, total: number): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'");
    if (rows[0].n >= total) return;
    if (Date.now() > deadline) throw new Error(`only ${rows[0].n} of ${total} jobs done after 10 minutes`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
