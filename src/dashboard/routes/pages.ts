/** The pages: overview, jobs, one job, dead letters, schedules. Reads only. */
import type { Hono } from 'hono';
import type { Schedule } from '../../config/index.ts';
import {
  batchCallOf,
  countJobs,
  deadLetterGroups,
  getJob,
  listJobs,
  overview,
  QUEUE_NAME,
  relationsOf,
  scheduleSummaries,
  stepsOf,
  throughput,
} from '../../queue/admin/index.ts';
import { cached } from '../../cached.ts';
import type { DashboardDb } from '../db.ts';
import { readFilter } from '../filter.ts';
import { redactJob, redactLastError, redactSteps } from '../redact.ts';
import { deadLettersPage } from '../views/dead_letters.ts';
import { jobPage } from '../views/job.ts';
import { jobsPage } from '../views/jobs.ts';
import { count, type ViewContext } from '../views/layout.ts';
import { messagePage } from '../views/message.ts';
import { overviewPage } from '../views/overview.ts';
import { schedulesPage } from '../views/schedules.ts';

/** How long a throughput chart is reused, per range. */
export const THROUGHPUT_TTL_MS = { hour: 15_000, day: 60_000 } as const;

/** PostgreSQL's query_canceled: the statement bound was reached. */
export const STATEMENT_TIMEOUT = '57014';

/** Rows per page of the jobs list. */
export const PAGE_SIZE = 50;

export const JOB_ID = /^[1-9]\d{0,17}$/;

export function pageRoutes(
  app: Hono,
  deps: { view: ViewContext; db: DashboardDb; redact: readonly string[]; schedules: Schedule[] },
): void {
  const { view, db } = deps;

  // The charts change slowly (1-minute and 15-minute buckets); the per-queue counts are read on every request.
  const hour = cached(THROUGHPUT_TTL_MS.hour, () => db.use((store) => throughput(store, 'hour')));
  const day = cached(THROUGHPUT_TTL_MS.day, () => db.use((store) => throughput(store, 'day')));

  app.get('/', async (c) => {
    const [o, h, d] = await Promise.all([db.use((store) => overview(store)), hour(), day()]);
    const queue = c.req.query('queue');
    return c.html(
      overviewPage(view, {
        ...o,
        hour: h,
        day: d,
        flash: c.req.query('done'),
        flashQueue: queue && QUEUE_NAME.test(queue) ? queue : undefined,
      }),
    );
  });

  app.get('/jobs', async (c) => {
    const read = readFilter((name) => c.req.query(name), deps.redact);
    if ('error' in read) return c.html(messagePage(view, 'Bad filter', read.error), 400);
    const { params, filter } = read;
    const after = c.req.query('after');
    const before = c.req.query('before');
    // On two connections at once: a text filter makes both scan.
    const [list, total] = await Promise.all([
      db.use((store) =>
        listJobs(store, filter, {
          limit: PAGE_SIZE,
          after: after && JOB_ID.test(after) ? after : null,
          before: before && JOB_ID.test(before) ? before : null,
        }),
      ),
      // A count that hits the statement bound (a text filter on a huge table) leaves the list readable.
      db
        .use((store) => countJobs(store, filter))
        .catch((err: Error & { code?: string }) => {
          if (err.code === STATEMENT_TIMEOUT) return null;
          throw err;
        }),
    ]);
    const n = Number(c.req.query('n'));
    return c.html(
      jobsPage(view, {
        params,
        jobs: list.jobs.map((j) => redactLastError(j, deps.redact)),
        next: list.next,
        prev: list.prev,
        total,
        flash: c.req.query('done'),
        flashDetail: Number.isSafeInteger(n) && n >= 0 ? `${count(n)} job${n === 1 ? '' : 's'} changed.` : undefined,
      }),
    );
  });

  app.get('/jobs/:id', async (c) => {
    const id = c.req.param('id');
    const found = JOB_ID.test(id)
      ? await db.use(async (store) => {
          const job = await getJob(store, id);
          return (
            job && {
              job,
              relations: await relationsOf(store, id),
              batch: await batchCallOf(store, id),
              steps: await stepsOf(store, id),
            }
          );
        })
      : null;
    if (!found) return c.html(messagePage(view, 'Not found', `There is no job ${id}.`), 404);
    const { job, relations, batch } = found;
    // A result, progress value or step result may carry what the payload did, and an error may quote either.
    const shown = redactJob(job, deps.redact);
    const steps = redactSteps(found.steps, job, deps.redact);
    return c.html(jobPage(view, shown, relations, shown.payload, c.req.query('done'), batch, steps));
  });

  app.get('/dead-letters', async (c) => {
    const groups = await db.use((store) => deadLetterGroups(store));
    return c.html(deadLettersPage(view, groups));
  });

  app.get('/schedules', async (c) => {
    const lines = await db.use((store) => scheduleSummaries(store, deps.schedules));
    return c.html(schedulesPage(view, lines));
  });
}
