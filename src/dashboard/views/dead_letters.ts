/** Dead letters grouped by kind and the first line of the error, each group retryable at once. */
import { html } from 'hono/html';
import type { DeadLetterGroup } from '../../queue/admin/index.ts';
import { toQuery } from '../filter.ts';
import { count, layout, time, type ViewContext } from './layout.ts';

export function deadLettersPage(v: ViewContext, groups: DeadLetterGroup[]) {
  const body = html`<h1>Dead letters</h1>
    <p class="muted">Grouped by kind and by the first line of the error. Fix the cause, then retry the group.</p>
    <table id="groups" class="stack">
      <thead>
        <tr>
          <th>Kind</th>
          <th>Error (first line)</th>
          <th class="num">Count</th>
          <th>First seen</th>
          <th>Last seen</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${
          groups.length === 0
            ? html`<tr>
                <td colspan="6" class="muted">No dead letters.</td>
              </tr>`
            : ''
        }
        ${groups.map((g) => {
          const p = { status: 'failed', kind: g.kind, errorPrefix: g.errorPrefix };
          return html`<tr>
            <td>${g.kind}</td>
            <td class="err"><a href="${v.base}jobs?${toQuery(p)}">${g.errorPrefix || '(empty)'}</a></td>
            <td class="num">${count(g.count)}</td>
            <td>${time(g.firstSeen)}</td>
            <td>${time(g.lastSeen)}</td>
            <td>
              ${
                v.readOnly
                  ? ''
                  : html`<form method="post" action="${v.base}jobs/retry">
                      <input type="hidden" name="status" value="failed" />
                      <input type="hidden" name="kind" value="${g.kind}" />
                      <input type="hidden" name="errorPrefix" value="${g.errorPrefix}" />
                      <button type="submit">Retry all</button>
                    </form>`
              }
            </td>
          </tr>`;
        })}
      </tbody>
    </table>`;
  return layout(v, 'Dead letters', 'dead-letters', body);
}
