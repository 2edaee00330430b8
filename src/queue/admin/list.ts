/**
 * Lists and counts of jobs by filter, newest first, for `jobs list` and the
 * dashboard's Jobs page.
 *
 * Pages are keyset pages on id (`id < after ORDER BY id DESC`), never OFFSET:
 * page 1,000 costs what page 1 costs, and rows inserted meanwhile cannot shift
 * a page so that a row shows twice or not at all. Counts stop at a cap, so a
 * confirmation over a 10 M-row table reads at most cap + 1 index entries.
 */
import { planned, run, type Store } from '../sql.ts';
import { cursorParam, FILTER_PARAMS, FILTER_WHERE, filterParams } from './filter.ts';
import { ACTION_STATUSES, time, type BulkAction, type JobFilter, type JobRow, type Page, type Time } from './types.ts';

/** Most rows one page may hold. */
export const MAX_PAGE = 10_000;

export const JOB_COLUMNS = `id, queue, kind, status, priority, attempts, max_attempts, run_at, created_at, started_at,
       finished_at, locked_by, unique_key, last_error, payload, result, progress, snoozes`;

const LIST_JOBS = planned(
  'admin_list_jobs',
  `
SELECT ${JOB_COLUMNS}
  FROM jobvisor.jobs
 WHERE ${FILTER_WHERE}
   AND ($${FILTER_PARAMS + 1}::bigint IS NULL OR id < $${FILTER_PARAMS + 1})
 ORDER BY id DESC
 LIMIT $${FILTER_PARAMS + 2}`,
);

// The newer page: the `limit` ids just above the cursor, read upwards and
// turned round, so "← Newer" costs what "Older →" does.
const LIST_NEWER = planned(
  'admin_list_jobs_newer',
  `
SELECT ${JOB_COLUMNS}
  FROM jobvisor.jobs
 WHERE ${FILTER_WHERE}
   AND id > $${FILTER_PARAMS + 1}
 ORDER BY id
 LIMIT $${FILTER_PARAMS + 2}`,
);

/** Timestamps of a row as Time (±infinity named). */
export function jobRow<R extends JobRow>(r: R): R {
  r.run_at = time(r.run_at) as Time;
  r.created_at = time(r.created_at) as Time;
  r.started_at = time(r.started_at);
  r.finished_at = time(r.finished_at);
  return r;
}

/**
 * One page of the jobs matching `filter`, newest first.
 * @returns the jobs; `next`, the `after` cursor of the older page (null on the
 * last); `prev`, the `before` cursor of the newer page (null on the first).
 * @throws InputError for a bad id, cursor or status in the filter.
 */
export async function listJobs(
  store: Store,
  filter: JobFilter,
  page: Page,
): Promise<{ jobs: JobRow[]; next: string | null; prev: string | null }> {
  const limit = Math.max(1, Math.min(MAX_PAGE, Math.floor(page.limit)));
  const before = cursorParam(page.before);
  if (before !== null) {
    const rows = await run<JobRow>(store, LIST_NEWER, [...filterParams(filter), before, limit + 1]);
    const jobs = rows.slice(0, limit).reverse().map(jobRow);
    // The cursor's own row (or older ones) exists: there is an older page, unless this one is empty.
    return { jobs, next: jobs[jobs.length - 1]?.id ?? null, prev: rows.length > limit ? (jobs[0]?.id ?? null) : null };
  }
  const after = cursorParam(page.after);
  const rows = await run<JobRow>(store, LIST_JOBS, [...filterParams(filter), after, limit + 1]);
  const jobs = rows.slice(0, limit).map(jobRow);
  return {
    jobs,
    next: rows.length > limit ? (jobs[jobs.length - 1]?.id ?? null) : null,
    prev: after === null ? null : (jobs[0]?.id ?? after),
  };
}

const COUNT_JOBS = planned(
  'admin_count_jobs',
  `
SELECT count(*)::int AS n
  FROM (SELECT 1 FROM jobvisor.jobs WHERE ${FILTER_WHERE} LIMIT $${FILTER_PARAMS + 1}) AS matching`,
);

/** Default cap of countJobs. */
export const COUNT_CAP = 10_000;

/**
 * How many jobs match `filter`, counting at most `cap`; with `action`, only
 * those in a status that action applies to (what a confirmation should say).
 * @returns the count, and `capped` when there are more than `cap` (count is then `cap`).
 */
export async function countJobs(
  store: Store,
  filter: JobFilter,
  cap = COUNT_CAP,
  action?: BulkAction,
): Promise<{ count: number; capped: boolean }> {
  const limit = Math.max(0, Math.floor(cap));
  const params = filterParams(filter, action === undefined ? undefined : ACTION_STATUSES[action]);
  const [row] = await run<{ n: number }>(store, COUNT_JOBS, [...params, limit + 1]);
  const n = row?.n ?? 0;
  return n > limit ? { count: limit, capped: true } : { count: n, capped: false };
}

const STATUS_OF = planned('status_of', `SELECT id, status FROM jobvisor.jobs WHERE id = ANY($1::bigint[])`);

/** The status of each id that exists. */
export async function statusOf(store: Store, ids: string[]): Promise<Map<string, string>> {
  return new Map((await run<{ id: string; status: string }>(store, STATUS_OF, [ids])).map((r) => [r.id, r.status]));
}
