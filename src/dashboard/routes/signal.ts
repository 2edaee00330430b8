/**
 * POST /jobs/:id/signal (fields `name`, `payload`): sends the job a signal, as
 * signal() does (queue/signal.ts), then back to the job's page saying what
 * became of it. The same-site check, the credential check and read-only mode
 * apply before this runs, as to every action (app.ts), and so does the
 * dashboard's statement bound (db.ts): a job row locked elsewhere answers 503. A payload that is not
 * JSON, a bad name or a payload over 64 KiB answers 400 and sends nothing; a
 * finished, cancelled or missing job answers 409 or 404 with the reason.
 */
import type { Hono } from 'hono';
import { InputError, messageOf } from '../../errors.ts';
import { SignalError, signalThrough } from '../../queue/signal.ts';
import type { DashboardDb } from '../db.ts';
import type { ViewContext } from '../views/layout.ts';
import { messagePage } from '../views/message.ts';
import { JOB_ID } from './pages.ts';

export function signalRoutes(app: Hono, deps: { view: ViewContext; db: DashboardDb }): void {
  const { view, db } = deps;
  app.post('/jobs/:id/signal', async (c) => {
    const id = c.req.param('id');
    if (!JOB_ID.test(id)) return c.html(messagePage(view, 'Not found', `There is no job ${id}.`), 404);
    const form = await c.req.parseBody();
    const name = typeof form.name === 'string' ? form.name : '';
    const text = typeof form.payload === 'string' ? form.payload.trim() : '';
    let payload: unknown;
    if (text !== '') {
      try {
        payload = JSON.parse(text);
      } catch (err) {
        const why = `The payload is not JSON (${messageOf(err)}); nothing was sent. Leave it empty to send none.`;
        return c.html(messagePage(view, 'Bad signal', why), 400);
      }
    }
    try {
      const outcome = await db.use((store) => signalThrough(store, id, name, payload));
      return c.redirect(`${view.base}jobs/${id}?done=signal-${outcome}`, 303);
    } catch (err) {
      if (err instanceof InputError)
        return c.html(messagePage(view, 'Bad signal', `${err.message}; nothing was sent.`), 400);
      if (err instanceof SignalError)
        return c.html(
          messagePage(view, 'Signal refused', `${err.message}; nothing was sent.`),
          err.code === 'JOB_NOT_FOUND' ? 404 : 409,
        );
      throw err;
    }
  });
}
