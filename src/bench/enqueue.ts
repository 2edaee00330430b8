/**
 * Scenario "enqueue": N jobs in one call. jobvisor's enqueueMany (COPY for
 * large batches) against the plain multi-row INSERT … SELECT FROM unnest.
 */
import { enqueueMany } from '../queue/enqueue.ts';
import type { BenchDatabase } from './database.ts';
import { noopJobs } from './harness.ts';

const UNNEST_INSERT = `INSERT INTO jobvisor.jobs (queue, kind, payload) SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])`;

export async function enqueueJobvisor(db: BenchDatabase, jobs: number): Promise<number> {
  const specs = noopJobs(jobs);
  const t0 = performance.now();
  await enqueueMany(db.pool, specs);
  return (performance.now() - t0) / 1000;
}

export async function enqueueUnnest(db: BenchDatabase, jobs: number): Promise<number> {
  const specs = noopJobs(jobs);
  const t0 = performance.now();
  await db.pool.query(UNNEST_INSERT, [
    specs.map((s) => s.queue),
    specs.map((s) => s.kind),
    specs.map((s) => JSON.stringify(s.payload)),
  ]);
  return (performance.now() - t0) / 1000;
}

/** The enqueue scenario's systems besides the peers: each one's timed insert of N jobs. */
export const ENQUEUERS = { jobvisor: enqueueJobvisor, 'unnest-insert': enqueueUnnest } as const;
