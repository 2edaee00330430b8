/**
 * Confirmation of a bulk action: states how many jobs match now and re-posts
 * the same filter with `confirm` set. Works without the script.
 */
import { html } from 'hono/html';
import { FILTER_FIELDS, type FilterParams } from '../filter.ts';
import { filterInputs, countText } from './jobs.ts';
import { layout, type ViewContext } from './layout.ts';

const VERB: Record<string, string> = { retry: 'Retry', cancel: 'Cancel', delete: 'Delete' };

export function confirmPage(
  v: ViewContext,
  action: string,
  p: FilterParams,
  total: { count: number; capped: boolean },
) {
  const verb = VERB[action] ?? action;
  const body = html`<h1>${verb} ${countText(total)} jobs?</h1>
    <p id="confirm-count">
      ${verb} <b>${countText(total)}</b> job${total.count === 1 ? '' : 's'} matching this
      filter${total.capped ? ' (counting stopped there; every matching job will be included)' : ''}:
    </p>
    <ul>
      ${FILTER_FIELDS.filter((f) => p[f]).map((f) => html`<li>${f} = <code>${p[f]}</code></li>`)}
    </ul>
    <p class="muted">
      ${
        action === 'retry'
          ? 'Dead letters and cancelled jobs go back to pending with attempts reset; others are left alone.'
          : action === 'cancel'
            ? 'Pending and running jobs are cancelled; others are left alone.'
            : 'Matching jobs that are not running are deleted for good.'
      }
    </p>
    <div class="actions">
      <form method="post" action="${v.base}jobs/${action}">
        ${filterInputs(p)}
        <input type="hidden" name="confirm" value="${total.count}" />
        <button type="submit" class="${action === 'delete' ? 'danger' : ''}">Yes, ${verb.toLowerCase()} them</button>
      </form>
      <a href="${v.base}jobs?${new URLSearchParams(Object.entries(p)).toString()}">No, go back</a>
    </div>`;
  return layout(v, `${verb} jobs`, 'jobs', body);
}
