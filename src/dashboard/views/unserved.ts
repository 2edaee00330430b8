/** The warning for queues that no live supervisor serves: their jobs wait until one does. */
import { html } from 'hono/html';

export function unservedWarning(queues: string[]) {
  if (queues.length === 0) return html``;
  return html`<div class="flash warn" role="alert" id="unserved">
    ${queues.map(
      (q) =>
        html`<p>
          No live supervisor has queue <b>${q}</b> in its config: its jobs wait until one that lists it under
          <code>queues</code> starts.
        </p>`,
    )}
  </div>`;
}
