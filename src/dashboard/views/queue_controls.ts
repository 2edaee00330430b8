/**
 * Pause / resume buttons of a queue, shown on the overview and the queue page.
 * Pausing asks first (the script's data-confirm); both are POST forms behind
 * the same login, same-site check and read-only mode as every action.
 */
import { html } from 'hono/html';
import type { ViewContext } from './layout.ts';

/** The queue page's path for `queue`, under basePath. */
export function queuePath(v: ViewContext, queue: string): string {
  return `${v.base}queues/${encodeURIComponent(queue)}`;
}

/** `back`: where the action returns to ("overview" or "queue"). Nothing in read-only mode. */
export function queueControls(v: ViewContext, queue: string, paused: boolean, back: 'overview' | 'queue') {
  if (v.readOnly) return html``;
  const action = paused ? 'resume' : 'pause';
  return html`<form
    method="post"
    class="inline"
    action="${queuePath(v, queue)}/${action}"
    ${paused ? '' : html`data-confirm="Pause queue ${queue}? No job of it starts until it is resumed."`}
  >
    <input type="hidden" name="back" value="${back}" />
    <button type="submit" class="${paused ? '' : 'warn'}" data-queue-action="${action}">
      ${paused ? 'Resume' : 'Pause'}
    </button>
  </form>`;
}
