/** The workflow graph page, `/jobs/:id/workflow`. A read only. */
import type { Hono } from 'hono';
import { workflowOf } from '../../queue/admin/index.ts';
import type { DashboardDb } from '../db.ts';
import { messagePage } from '../views/message.ts';
import type { ViewContext } from '../views/layout.ts';
import { workflowPage } from '../views/workflow.ts';
import { JOB_ID } from './pages.ts';

export function workflowRoutes(app: Hono, deps: { view: ViewContext; db: DashboardDb }): void {
  app.get('/jobs/:id/workflow', async (c) => {
    const id = c.req.param('id');
    const w = JOB_ID.test(id) ? await deps.db.use((store) => workflowOf(store, id)) : null;
    if (!w || w.nodes.length === 0) return c.html(messagePage(deps.view, 'Not found', `There is no job ${id}.`), 404);
    return c.html(workflowPage(deps.view, w));
  });
}
