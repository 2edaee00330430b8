/**
 * The queue page and its actions:
 *   GET  /queues/:name          the queue page
 *   POST /queues/:name/pause    pause it cluster-wide (pauseQueue)
 *   POST /queues/:name/resume   resume it (resumeQueue)
 * The actions pass the same login, same-site check and read-only mode as every
 * POST (app.ts); the form asks before pausing. Each returns to the page it was
 * sent from (`back`: overview or queue), saying whether anything changed.
 */
import type { Hono } from 'hono';
import { pauseQueue, pausedQueues, QUEUE_NAME as QUEUE, queueDetail, resumeQueue } from '../../queue/admin/index.ts';
import type { DashboardDb } from '../db.ts';
import type { ViewContext } from '../views/layout.ts';
import { messagePage } from '../views/message.ts';
import { queuePage } from '../views/queue.ts';
import { queuePath } from '../views/queue_controls.ts';

export function queueRoutes(app: Hono, deps: { view: ViewContext; db: DashboardDb }): void {
  const { view, db } = deps;
  const notFound = (name: string) => messagePage(view, 'Not found', `${JSON.stringify(name)} is not a queue name.`);

  app.get('/queues/:name', async (c) => {
    const name = c.req.param('name');
    if (!QUEUE.test(name)) return c.html(notFound(name), 404);
    const detail = await db.use((store) => queueDetail(store, name));
    return c.html(queuePage(view, detail, c.req.query('done')));
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post(`/queues/:name/${action}`, async (c) => {
      const name = c.req.param('name');
      if (!QUEUE.test(name)) return c.html(notFound(name), 404);
      const form = await c.req.parseBody();
      const done = await db.use(async (store) => {
        const was = (await pausedQueues(store)).has(name);
        if (was === (action === 'pause')) return action === 'pause' ? 'already-paused' : 'already-running';
        await (action === 'pause' ? pauseQueue : resumeQueue)(store.db, name, { schema: store.schema });
        return action === 'pause' ? 'paused' : 'resumed';
      });
      const to =
        form.back === 'overview'
          ? `${view.base}?done=${done}&queue=${encodeURIComponent(name)}`
          : `${queuePath(view, name)}?done=${done}`;
      return c.redirect(to, 303);
    });
  }
}
