/**
 * Workflows, read side: a job's parents and dependents (`jobs show`, the job
 * page), and the whole workflow a job belongs to (the graph page).
 *
 * Every read follows edges through an index of jobvisor.job_dependencies: its
 * primary key (child_id, parent_id) from a child to its parents, and
 * (parent_id) from a parent to its dependents; each job found is one probe of
 * the jobs' primary key. Nothing reads a table whole, so the cost follows the
 * size of the workflow asked about, never the table's. An edge whose job row is
 * gone (deleted) is not listed.
 */
import { planned, run, type Store } from '../sql.ts';
import { checkIds } from './filter.ts';

/** A job at the other end of an edge. */
export interface RelatedJob {
  id: string;
  kind: string;
  queue: string;
  status: string;
}

/** One direction of a job's edges: the first `limit` jobs (unfinished first, then by id), and how many there are. */
export interface RelatedJobs {
  jobs: RelatedJob[];
  total: number;
  /** Status → count, over all of them (not only those listed); statuses in alphabetical order. */
  byStatus: Record<string, number>;
}

/** A job's workflow neighbours as relationsOf() reads them: its parents and the jobs that wait for it. */
export interface Relations {
  parents: RelatedJobs;
  dependents: RelatedJobs;
}

/** Jobs listed per direction by default: a fan-in job may have 10,000 parents. */
export const RELATED_LIMIT = 100;

// Outstanding jobs (not done) first: of a fan-in's 10,000 parents, the ones it
// still waits for are what an operator looks for. The sort is over this job's
// edges only (at most its number of parents or dependents), never the table.
// Each edge's job is a LATERAL probe with LIMIT 1, which PostgreSQL cannot
// flatten into a join: as a plain join, 2,000 parents on a 208 k-row table were
// a hash join over a parallel sequential scan of all of jobs
// (test/admin_plans.test.ts), a cost that would grow with the table.
const RELATED = planned(
  'admin_related',
  `
SELECT side, id, kind, queue, status FROM (
  SELECT 'parent' AS side, j.id, j.kind, j.queue, j.status,
         row_number() OVER (ORDER BY j.status = 'done', j.id) AS n
    FROM jobvisor.job_dependencies AS d
   CROSS JOIN LATERAL (SELECT id, kind, queue, status FROM jobvisor.jobs WHERE id = d.parent_id LIMIT 1) AS j
   WHERE d.child_id = $1
  UNION ALL
  SELECT 'dependent', j.id, j.kind, j.queue, j.status,
         row_number() OVER (ORDER BY j.status = 'done', j.id)
    FROM jobvisor.job_dependencies AS d
   CROSS JOIN LATERAL (SELECT id, kind, queue, status FROM jobvisor.jobs WHERE id = d.child_id LIMIT 1) AS j
   WHERE d.parent_id = $1
) AS related
 WHERE n <= $2
 ORDER BY side, n`,
);

const RELATED_COUNTS = planned(
  'admin_related_counts',
  `
SELECT 'parent' AS side, j.status, count(*)::int AS count
  FROM jobvisor.job_dependencies AS d
   CROSS JOIN LATERAL (SELECT id, kind, queue, status FROM jobvisor.jobs WHERE id = d.parent_id LIMIT 1) AS j
 WHERE d.child_id = $1
 GROUP BY j.status
UNION ALL
SELECT 'dependent', j.status, count(*)::int
  FROM jobvisor.job_dependencies AS d
   CROSS JOIN LATERAL (SELECT id, kind, queue, status FROM jobvisor.jobs WHERE id = d.child_id LIMIT 1) AS j
 WHERE d.parent_id = $1
 GROUP BY j.status`,
);

/**
 * The parents and the dependents of job `id`, with their statuses. A job
 * outside any workflow (or one that does not exist) has none.
 * @throws InputError when `id` is not a positive integer.
 */
export async function relationsOf(store: Store, id: string, limit = RELATED_LIMIT): Promise<Relations> {
  const [checked] = checkIds([id]);
  const n = Math.max(0, Math.floor(limit));
  // One after the other: the store may be a single client.
  const rows = await run<RelatedJob & { side: string }>(store, RELATED, [checked, n]);
  const counts = await run<{ side: string; status: string; count: number }>(store, RELATED_COUNTS, [checked]);
  const side = (which: string): RelatedJobs => {
    const byStatus: Record<string, number> = {};
    const mine = counts.filter((c) => c.side === which).sort((a, b) => (a.status < b.status ? -1 : 1));
    for (const c of mine) byStatus[c.status] = c.count;
    return {
      jobs: rows.filter((r) => r.side === which).map(({ id, kind, queue, status }) => ({ id, kind, queue, status })),
      total: Object.values(byStatus).reduce((a, b) => a + b, 0),
      byStatus,
    };
  };
  return { parents: side('parent'), dependents: side('dependent') };
}

/** A job of a workflow, with its parents among the workflow's jobs that were read. */
export interface WorkflowNode extends RelatedJob {
  parents: string[];
}

/** The workflow a job belongs to, as workflowOf() reads it: up to `limit` jobs nearest to it, with their edges. */
export interface Workflow {
  /** The job asked about. */
  root: string;
  nodes: WorkflowNode[];
  /** True when the workflow has more than `limit` jobs: `nodes` holds the `limit` nearest to `root`. */
  truncated: boolean;
  limit: number;
}

/**
 * Jobs one workflow read collects at most. The graph page draws every node up
 * to a few hundred and counts the rest per layer, so more nodes would not show
 * more; the read costs about three index probes per node and edge (2,000
 * nodes of a 3 → 1 workflow set: 9 ms on the test machine), and a 10,000 →
 * 1 fan-in must stay well inside the dashboard's statement bound.
 */
export const WORKFLOW_LIMIT = 2000;

// The connected component over the edges, both ways. UNION (not UNION ALL)
// keeps each id once, so the walk ends however the edges meet (a diamond is
// reached twice). PostgreSQL evaluates a recursive CTE only as far as its
// reader fetches, so LIMIT stops the walk itself after limit + 1 ids: nearest
// first, since the walk goes breadth first.
const COMPONENT = planned(
  'admin_workflow_component',
  `
WITH RECURSIVE component(id) AS (
  SELECT $1::bigint
  UNION
  SELECT next.id
    FROM component AS c
   CROSS JOIN LATERAL (SELECT parent_id AS id FROM jobvisor.job_dependencies WHERE child_id = c.id
                       UNION ALL
                       SELECT child_id FROM jobvisor.job_dependencies WHERE parent_id = c.id) AS next
)
SELECT id::text AS id FROM component LIMIT $2`,
);

// The rows of those ids, each one probe of the jobs' primary key.
const NODES = planned(
  'admin_workflow_nodes',
  `
SELECT j.id, j.kind, j.queue, j.status
  FROM jobvisor.jobs AS j
 WHERE j.id = ANY($1::bigint[])
 ORDER BY j.id`,
);

// Their edges to parents: one probe of the primary key's prefix per id. Kept
// to edges inside the set in the caller, with a hash set: tested per row in
// SQL (parent_id = ANY of the 2,000 ids) the 2,100 edges of one fan-in cost
// 1.9 s, against about 10 ms this way. A fan-in's 10,000 parents are 10,000
// index entries whatever the limit, which is why the limit is on nodes.
const EDGES = planned(
  'admin_workflow_edges',
  `
SELECT d.child_id::text AS child, d.parent_id::text AS parent
  FROM unnest($1::bigint[]) AS c(id)
 CROSS JOIN LATERAL (SELECT child_id, parent_id FROM jobvisor.job_dependencies WHERE child_id = c.id) AS d
 ORDER BY d.child_id, d.parent_id`,
);

/**
 * The workflow job `id` belongs to: every job connected to it by edges in
 * either direction, at most `limit` of them (default WORKFLOW_LIMIT). A job
 * outside any workflow gives itself alone; one that does not exist gives no nodes.
 * @throws InputError when `id` is not a positive integer.
 */
export async function workflowOf(store: Store, id: string, limit = WORKFLOW_LIMIT): Promise<Workflow> {
  const [root] = checkIds([id]) as [string];
  const n = Math.max(1, Math.floor(limit));
  const ids = (await run<{ id: string }>(store, COMPONENT, [root, n + 1])).map((r) => r.id);
  const truncated = ids.length > n;
  const kept = ids.slice(0, n);
  const rows = await run<RelatedJob>(store, NODES, [kept]);
  const inside = new Set(kept);
  const parents = new Map<string, string[]>();
  for (const e of await run<{ child: string; parent: string }>(store, EDGES, [kept]))
    if (inside.has(e.parent)) {
      const list = parents.get(e.child);
      if (list) list.push(e.parent);
      else parents.set(e.child, [e.parent]);
    }
  const nodes = rows.map((r) => ({ ...r, parents: parents.get(r.id) ?? [] }));
  return { root, nodes, truncated, limit: n };
}
