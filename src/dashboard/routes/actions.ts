/**
 * The actions, each a POST form (the same-site check and read-only mode are
 * applied before these run, in app.ts).
 *   /jobs/:id/{retry,cancel,run-now,delete}  one job, then back to its page
 *   /jobs/{retry,cancel,delete}              everything matching the filter, or the
 *                                            rows ticked on the list (fields `ids`:
 *                                            exactly those, whatever the filter)
 * A bulk action without `confirm` answers with a page that states how many jobs
 * match and posts again with `confirm`; only that second post changes rows.
 * A bulk action needs at least one filter field: "every job" is never one click.
 */
import type { Hono } from 'hono';
import { cancelJobs, COUNT_CAP, countJobs, deleteJobs, retryJobs, runJobsNow } from '../../queue/admin/index.ts';
import type { DashboardDb } from '../db.ts';
import { isEmpty, readFilter, toQuery } from '../filter.ts';
import { confirmPage } from '../views/confirm.ts';
import type { ViewContext } from '../views/layout.ts';
import { messagePage } from '../views/message.ts';
import { JOB_ID } from './pages.ts';

const ONE = {
  retry: [retryJobs, 'retried'],
  cancel: [cancelJobs, 'cancelled'],
  'run-now': [runJobsNow, 'ran-now'],
  delete: [deleteJobs, 'deleted'],
} as const;

const BULK = { retry: ONE.retry, cancel: ONE.cancel, delete: ONE.delete } as const;

export function actionRoutes(app: Hono, deps: { view: ViewContext; db: DashboardDb; redact: readonly string[] }): void {
  const { view, db, redact } = deps;

  for (const [action, [run, done]] of Object.entries(ONE)) {
    app.post(`/jobs/:id/${action}`, async (c) => {
      const id = c.req.param('id');
      if (!JOB_ID.test(id)) return c.html(messagePage(view, 'Not found', `There is no job ${id}.`), 404);
      const result = await db.use((store) => run(store, { ids: [id] }));
      const shown = result.changed > 0 ? done : 'unchanged';
      if (action === 'delete' && result.changed > 0) return c.redirect(`${view.base}jobs?done=deleted`, 303);
      return c.redirect(`${view.base}jobs/${id}?done=${shown}`, 303);
    });
  }

  for (const [action, [run, done]] of Object.entries(BULK)) {
    app.post(`/jobs/${action}`, async (c) => {
      const form = await c.req.parseBody({ all: true });
      const ticked = selectedIds(form.ids);
      if (ticked === null && form.selection === '1')
        return c.html(messagePage(view, 'Nothing selected', 'Tick the rows to act on first.'), 400);
      const read =
        ticked === null
          ? readFilter((name) => (typeof form[name] === 'string' ? form[name] : undefined), redact)
          : readFilter((name) => (name === 'id' ? ticked : undefined), redact);
      if ('error' in read) return c.html(messagePage(view, 'Bad filter', read.error), 400);
      const { params, filter } = read;
      if (isEmpty(params))
        return c.html(messagePage(view, 'Choose a filter', 'A bulk action needs at least one filter field.'), 400);
      if (typeof form.confirm !== 'string') {
        // The number the action would change: matching rows in a status it applies to.
        const total = await db.use((store) => countJobs(store, filter, COUNT_CAP, action as keyof typeof BULK));
        return c.html(confirmPage(view, action, params, total));
      }
      const result = await db.use((store) => run(store, { filter }));
      const shown = result.changed > 0 ? done : 'none-changed';
      return c.redirect(`${view.base}jobs?${toQuery(params, { done: shown, n: String(result.changed) })}`, 303);
    });
  }
}

/** The ticked rows' ids as one `id` filter value, or null when none was sent. */
function selectedIds(value: unknown): string | null {
  const all = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string' && v !== '');
  return all.length === 0 ? null : all.join(',');
}
