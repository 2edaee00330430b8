/**
 * What a workflow job reads of its parents: ctx.parents() (all of them, as
 * one array) and ctx.eachParent() (one at a time). Both read pages of at most
 * PARENT_PAGE_ROWS parents and about PARENT_PAGE_BYTES of JSON, in id order.
 *
 * Why pages: the whole list as one JSON text is one JavaScript string, and a
 * fan-in within the documented limits (9,000 parents returning 60,000
 * characters each; dependsOn takes 100,000) is past V8's longest string
 * (2^29 - 24 characters): the child failed on every attempt. ctx.parents()
 * still returns one array, up to PARENTS_MAX_CHARS of JSON, beyond which it
 * throws ParentsTooLargeError (permanent) instead of growing the thread's heap
 * until it dies, which would fail the jobs sharing the thread with it too.
 *
 * A parent deleted by hand (`jobs delete --force`) is not listed.
 */
import { ParentsTooLargeError } from '../errors.ts';
import type { Db } from './sql.ts';
import { planned, run } from './sql.ts';

/** One parent of a workflow job, as `ctx.parents()` and `ctx.eachParent()` give it. */
export interface ParentJob {
  id: string;
  kind: string;
  /** `done`, or `failed`/`cancelled` for a job that runs anyway (onParentFailure 'run'), or a re-queued parent's current status. */
  status: string;
  /** The parent's return value (null when it returned nothing). */
  result: unknown;
}

/** Parents per page, at most. */
export const PARENT_PAGE_ROWS = 1000;
/** Bytes of results (as JSON) a page stops at; a page holds at least one parent, whatever its size. */
export const PARENT_PAGE_BYTES = 8 * 1024 * 1024;
/** Characters of JSON ctx.parents() returns at most; past them it throws ParentsTooLargeError. */
export const PARENTS_MAX_CHARS = 128 * 1024 * 1024;

// The page's edges by the primary key's prefix (child_id, parent_id), in
// order; each parent one probe of jobs_pkey. Each parent comes back as its own
// row holding its JSON text (`part`), made once and measured once: the running
// sum of their sizes cuts the page, `before` being the size ahead of a row, so
// the first row is always kept. The window follows the edges' order, so it
// needs no sort. Rows rather than one aggregated text: on a page of 140
// results of 60 KB, json_agg(json_build_object(…)) and string_agg with ORDER
// BY each spent longer building and sorting one 8 MB text than reading the
// rows (1.9 s and 1.3 s against 0.5 s, on the loaded test machine). Rows come
// in the window's order; the reader sorts a page by id anyway.
// `cut`: the byte bound stopped the page; the next page starts after its last
// row then, else after the last edge read (`last_edge`; `edges` = $3 says more
// may follow).
const PARENTS_PAGE = planned(
  'parents_page',
  `
WITH d AS (
  SELECT d.parent_id FROM jobvisor.job_dependencies AS d
   WHERE d.child_id = $1::bigint AND d.parent_id > $2::bigint
   ORDER BY d.parent_id
   LIMIT $3
), p AS (
  SELECT p.id, p.part, sum(octet_length(p.part)) OVER (ORDER BY d.parent_id) - octet_length(p.part) AS before
    FROM d
   CROSS JOIN LATERAL (SELECT id, '{"id":"' || id || '","kind":' || to_json(kind)::text || ',"status":"' || status
                              || '","result":' || coalesce(result::text, 'null') || '}' AS part
                         FROM jobvisor.jobs WHERE id = d.parent_id LIMIT 1) AS p
)
SELECT p.id::text AS id, p.part,
       EXISTS (SELECT 1 FROM p WHERE before >= $4) AS cut,
       (SELECT count(*) FROM d)::int AS edges,
       (SELECT max(parent_id) FROM d)::text AS last_edge
  FROM p
 WHERE p.before < $4`,
);

interface Page {
  parents: ParentJob[];
  /** Characters of JSON the page held. */
  chars: number;
}

/**
 * The pages of job `id`'s parents. The first page reads up to PARENT_PAGE_ROWS
 * edges; each next one about as many as the sizes seen so far say fit in
 * PARENT_PAGE_BYTES, so large results are not made and measured in vain.
 */
async function* pages(db: Db, schema: string, id: string): AsyncGenerator<Page, void, undefined> {
  let after = '0';
  let rows = PARENT_PAGE_ROWS;
  let chars = 0;
  let parents = 0;
  for (;;) {
    const read = await run<{ id: string; part: string; cut: boolean; edges: number; last_edge: string }>(
      { db, schema },
      PARENTS_PAGE,
      [id, after, rows, PARENT_PAGE_BYTES],
    );
    const first = read[0];
    if (!first) return;
    read.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    let size = 0;
    const page = read.map((r) => {
      size += r.part.length;
      return JSON.parse(r.part) as ParentJob;
    });
    yield { parents: page, chars: size };
    if (!first.cut && first.edges < rows) return;
    after = first.cut ? (read[read.length - 1] as (typeof read)[0]).id : first.last_edge;
    chars += size;
    parents += page.length;
    rows = Math.max(1, Math.min(PARENT_PAGE_ROWS, Math.ceil((PARENT_PAGE_BYTES * parents) / Math.max(1, chars)) + 1));
  }
}

/** The parents of job `id`, in id order, a page at a time (no page for a job without parents). */
export async function* parentPages(db: Db, schema: string, id: string): AsyncGenerator<ParentJob[], void, undefined> {
  for await (const page of pages(db, schema, id)) yield page.parents;
}

/** The parents of job `id`, one at a time, in id order; holds one page in memory. */
export async function* eachParent(db: Db, schema: string, id: string): AsyncGenerator<ParentJob, void, undefined> {
  for await (const page of pages(db, schema, id)) yield* page.parents;
}

/**
 * The parents of job `id`, in id order (empty for a job without parents).
 * @throws ParentsTooLargeError when their JSON passes PARENTS_MAX_CHARS (read them with eachParent).
 */
export async function listParents(db: Db, schema: string, id: string): Promise<ParentJob[]> {
  const all: ParentJob[] = [];
  let chars = 0;
  for await (const page of pages(db, schema, id)) {
    chars += page.chars;
    if (chars > PARENTS_MAX_CHARS) throw new ParentsTooLargeError(id, PARENTS_MAX_CHARS);
    for (const parent of page.parents) all.push(parent);
  }
  return all;
}
