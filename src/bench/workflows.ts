/**
 * Scenarios of workflows (jobs that wait for other jobs), enqueued with
 * enqueueMany's `dependsOn`, each job of a graph referring to earlier jobs of
 * the same call by `{ index }`:
 *
 *   - "fanin": N no-op parents → one fan-in job. Reports the time from the
 *     last parent recorded done to the fan-in job's start, and the database's
 *     cost per job (WAL bytes, and blocks touched, over the whole run);
 *   - "chain": a chain of N jobs, each waiting for the one before. Reports
 *     each link's latency (the child's start after its parent was recorded
 *     done), p50 and p95; the `pickup` scenario gives one job's own pickup to
 *     compare with;
 *   - "workflows": N workflows of 3 parents → 1 through 2 supervisors (child
 *     processes), against the same number of jobs without dependencies in the
 *     same run.
 *
 * Times are the database's own (finished_at of the parent, started_at of the
 * child: one clock). finished_at is the completer's transaction time, a
 * little before its commit, so a latency includes that write's commit.
 */
import { enqueueMany } from '../queue/enqueue.ts';
import type { JobSpec } from '../queue/enqueue_types.ts';
import type { BenchDatabase } from './database.ts';
import { BENCH_QUEUE, childSupervisor, noopJobs, type QueueShape } from './harness.ts';
import { WARM_UP, withWarmSupervisor } from './process.ts';
import { quantile } from './stats.ts';

const noop = (i: number): JobSpec => ({ kind: 'noop', queue: BENCH_QUEUE, payload: { i } });

/** The specs of N parents → 1 fan-in job (the last). Pure. */
export function fanInSpecs(parents: number): JobSpec[] {
  const specs = Array.from({ length: parents }, (_, i) => noop(i));
  specs.push({ ...noop(parents), dependsOn: specs.map((_, index) => ({ index })) });
  return specs;
}

/** The specs of a chain of N jobs, each depending on the one before. Pure. */
export function chainSpecs(n: number): JobSpec[] {
  return Array.from({ length: n }, (_, i) => (i === 0 ? noop(i) : { ...noop(i), dependsOn: [{ index: i - 1 }] }));
}

/** The specs of `count` workflows of 3 parents → 1 (4 jobs each). Pure. */
export function smallWorkflowSpecs(count: number): JobSpec[] {
  const specs: JobSpec[] = [];
  for (let w = 0; w < count; w++) {
    const base = specs.length;
    specs.push(noop(base), noop(base + 1), noop(base + 2));
    specs.push({ ...noop(base + 3), dependsOn: [{ index: base }, { index: base + 1 }, { index: base + 2 }] });
  }
  return specs;
}

/**
 * Checks that no child started before a parent was done (pairs by position),
 * which also refuses to report a build whose enqueueMany ignored `dependsOn`:
 * its numbers would be those of plain jobs.
 */
export async function checkOrder(db: BenchDatabase, parents: string[], children: string[]): Promise<void> {
  const { rows } = await db.pool.query<{ early: number; pairs: number }>(
    `SELECT count(*) FILTER (WHERE c.started_at IS NULL OR p.finished_at IS NULL OR c.started_at < p.finished_at)::int AS early,
            count(*)::int AS pairs
       FROM unnest($1::bigint[], $2::bigint[]) AS l(parent, child)
       JOIN jobvisor.jobs AS p ON p.id = l.parent
       JOIN jobvisor.jobs AS c ON c.id = l.child`,
    [parents, children],
  );
  const { early = 0, pairs = 0 } = rows[0] ?? {};
  if (pairs !== parents.length || early > 0)
    throw new Error(`${early} of ${parents.length} dependents started before their parent was done (no workflows?)`);
}

/** Waits until no job is pending, running or blocked, then checks that `total` are done. */
export async function waitWorkflowsDone(db: BenchDatabase, total: number, pollMs = 5): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const { rows } = await db.pool.query<{ busy: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM jobvisor.jobs WHERE status = 'pending')
           OR EXISTS (SELECT 1 FROM jobvisor.jobs WHERE status = 'running')
           OR EXISTS (SELECT 1 FROM jobvisor.jobs WHERE status = 'blocked') AS busy`,
    );
    if (!rows[0]?.busy) break;
    if (Date.now() > deadline) throw new Error('jobs still pending, running or blocked after 10 minutes');
    await new Promise((r) => setTimeout(r, pollMs));
  }
  const { rows } = await db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'done'",
  );
  if (rows[0]?.n !== total) throw new Error(`${rows[0]?.n} of ${total} jobs done; the others did not finish`);
}

/** WAL written and blocks touched in this database so far: the cost a run adds is the difference. */
async function databaseCost(db: BenchDatabase): Promise<{ wal: bigint; blocks: number }> {
  const { rows } = await db.pool.query<{ wal: string; blocks: string }>(
    `SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS wal,
            (SELECT blks_hit + blks_read FROM pg_stat_database WHERE datname = current_database()) AS blocks`,
  );
  return { wal: BigInt(rows[0]?.wal ?? '0'), blocks: Number(rows[0]?.blocks ?? 0) };
}

export interface FanInResult {
  parents: number;
  /** Last parent recorded done → the fan-in job's start, in ms. */
  unblockMs: number;
  walBytesPerJob: number;
  blocksPerJob: number;
}

export async function fanIn(db: BenchDatabase, parents: number, shape: QueueShape): Promise<FanInResult> {
  return withWarmSupervisor(db, shape, async (completions) => {
    const all = completions(parents + 1);
    const before = await databaseCost(db);
    const ids = (await enqueueMany(db.pool, fanInSpecs(parents))).map((r) => r.id);
    await all;
    const after = await databaseCost(db);
    await checkOrder(db, ids.slice(0, parents), Array<string>(parents).fill(ids[parents] as string));
    const { rows } = await db.pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM (SELECT started_at FROM jobvisor.jobs WHERE id = $1)
                                - (SELECT max(finished_at) FROM jobvisor.jobs WHERE id = ANY($2::bigint[]))) * 1000 AS ms`,
      [ids[parents], ids.slice(0, parents)],
    );
    const jobs = parents + 1;
    return {
      parents,
      unblockMs: Number(rows[0]?.ms),
      walBytesPerJob: Number(after.wal - before.wal) / jobs,
      blocksPerJob: (after.blocks - before.blocks) / jobs,
    };
  });
}

export interface ChainResult {
  links: number;
  p50Ms: number;
  p95Ms: number;
  /** First job's start → last job's end. */
  seconds: number;
}

export async function chain(db: BenchDatabase, n: number, shape: QueueShape): Promise<ChainResult> {
  return withWarmSupervisor(db, shape, async (completions) => {
    const all = completions(n);
    const ids = (await enqueueMany(db.pool, chainSpecs(n))).map((r) => r.id);
    await all;
    await checkOrder(db, ids.slice(0, -1), ids.slice(1));
    const { rows } = await db.pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM c.started_at - p.finished_at) * 1000 AS ms
         FROM unnest($1::bigint[], $2::bigint[]) AS l(parent, child)
         JOIN jobvisor.jobs AS p ON p.id = l.parent
         JOIN jobvisor.jobs AS c ON c.id = l.child`,
      [ids.slice(0, -1), ids.slice(1)],
    );
    const links = rows.map((r) => Number(r.ms));
    const { rows: span } = await db.pool.query<{ s: number }>(
      `SELECT extract(epoch FROM max(finished_at) - min(started_at)) AS s FROM jobvisor.jobs WHERE id = ANY($1::bigint[])`,
      [ids],
    );
    return {
      links: links.length,
      p50Ms: quantile(links, 0.5),
      p95Ms: quantile(links, 0.95),
      seconds: Number(span[0]?.s),
    };
  });
}

/**
 * `count` workflows of 3 → 1, or (`plain`) the same 4 × count jobs without
 * dependencies, through `processes` supervisors started and warmed up first.
 * The clock runs from the enqueue's commit to all done. Returns jobs/s.
 */
export async function smallWorkflows(
  db: BenchDatabase,
  count: number,
  options: { plain: boolean; processes: number; shape: QueueShape },
): Promise<number> {
  const children = await Promise.all(
    Array.from({ length: options.processes }, () => childSupervisor(db.url, options.shape)),
  );
  try {
    const warm = WARM_UP * options.processes;
    await enqueueMany(db.pool, noopJobs(warm));
    await waitWorkflowsDone(db, warm);
    const specs = options.plain ? noopJobs(count * 4) : smallWorkflowSpecs(count);
    const ids = (await enqueueMany(db.pool, specs)).map((r) => r.id);
    const t0 = performance.now();
    await waitWorkflowsDone(db, warm + specs.length);
    const jobsPerSec = specs.length / ((performance.now() - t0) / 1000);
    if (!options.plain) {
      // Job 4w + 3 waits for jobs 4w, 4w + 1 and 4w + 2.
      const parents = ids.filter((_, i) => i % 4 !== 3);
      await checkOrder(
        db,
        parents,
        parents.map((_, k) => ids[Math.floor(k / 3) * 4 + 3] as string),
      );
    }
    return jobsPerSec;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}
