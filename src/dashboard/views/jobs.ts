/**
 * The jobs list: filters kept in the URL, a capped count, keyset pages both
 * ways, bulk actions on the selected rows and on everything matching the
 * filter; only actions that can change a job of the filtered status are offered.
 */
import { html } from 'hono/html';
import type { JobRow } from '../../queue/admin/index.ts';
import { FILTER_FIELDS, isEmpty, STATUSES, toQuery, type FilterParams } from '../filter.ts';
import { bulkApplies } from './applicable.ts';
import { jobsTable } from './jobs_table.ts';
import { count, flash, layout, type Html, type ViewContext } from './layout.ts';

export interface JobsData {
  params: FilterParams;
  jobs: JobRow[];
  next: string | null;
  /** The `before` cursor of the newer page; null on the first page. */
  prev: string | null;
  /** Null when counting took longer than the statement bound (the list itself was read). */
  total: { count: number; capped: boolean } | null;
  flash?: string;
  flashDetail?: string;
}

const BULK_ACTIONS = [
  ['retry', 'Retry', false],
  ['cancel', 'Cancel', false],
  ['delete', 'Delete', true],
] as const;

export function countText(total: { count: number; capped: boolean }): string {
  return total.capped ? `${count(total.count)}+` : count(total.count);
}

/** Hidden inputs carrying the filter into a POST form. */
export function filterInputs(p: FilterParams): Html {
  return html`${FILTER_FIELDS.map((f) => (p[f] ? html`<input type="hidden" name="${f}" value="${p[f]}" />` : ''))}`;
}

function field(name: string, label: string, value: string | undefined, size = 14): Html {
  return html`<label>${label}<input name="${name}" value="${value ?? ''}" size="${size}" /></label>`;
}

export function jobsPage(v: ViewContext, d: JobsData) {
  const p = d.params;
  const offered = BULK_ACTIONS.filter(([action]) => bulkApplies(action, p.status));
  const bulk = (action: string, label: string, danger = false) =>
    html`<form method="post" action="${v.base}jobs/${action}">
      ${filterInputs(p)}<button type="submit" class="${danger ? 'danger' : ''}">${label} all matching</button>
    </form>`;
  const selectable = !v.readOnly && offered.length > 0 && d.jobs.length > 0;
  // One form for the ticked rows; each button posts them to its own action.
  const selection = selectable
    ? html`<form method="post" id="selection" action="${v.base}jobs/retry" class="actions selection">
        <input type="hidden" name="selection" value="1" />
        <span class="muted">Selected rows:</span>
        ${offered.map(
          ([action, label, danger]) =>
            html`<button
              type="submit"
              formaction="${v.base}jobs/${action}"
              class="${danger ? 'danger' : ''}"
              data-needs-selection
            >
              ${label} selected
            </button>`,
        )}
      </form>`
    : '';
  const body = html`<div data-refresh="10">
    <h1>Jobs</h1>
    ${flash(d.flash, d.flashDetail)}
    <form class="filters" method="get" action="${v.base}jobs">
      <label
        >Status<select name="status">
          <option value="">any</option>
          ${STATUSES.map((s) => html`<option value="${s}" ${p.status === s ? 'selected' : ''}>${s}</option>`)}
        </select></label
      >
      ${field('queue', 'Queue', p.queue, 10)} ${field('kind', 'Kind', p.kind)} ${field('id', 'Id', p.id, 10)}
      ${field('key', 'Unique key', p.key)} ${field('q', 'Text in payload', p.q)}
      ${field('error', 'Text in error', p.error)}
      ${p.errorPrefix ? html`<input type="hidden" name="errorPrefix" value="${p.errorPrefix}" />` : ''}
      <button type="submit">Filter</button>
      <a href="${v.base}jobs">clear</a>
      <button type="button" id="refresh-toggle" hidden>Pause auto-refresh</button>
    </form>
    ${p.errorPrefix ? html`<p>Error starts with: <code class="err">${p.errorPrefix}</code></p>` : ''}
    ${
      d.total
        ? html`<p><b id="job-count">${countText(d.total)}</b> matching job${d.total.count === 1 ? '' : 's'}.</p>`
        : html`<p class="muted" id="job-count">Not counted: counting took longer than the statement timeout.</p>`
    }
    ${
      !v.readOnly && !isEmpty(p) && d.total && d.total.count > 0
        ? html`<div class="actions">${offered.map(([action, label, danger]) => bulk(action, label, danger))}</div>`
        : ''
    }
    ${selection} ${jobsTable(v, d.jobs, selectable)}
    <p class="pager">
      ${p.id || !d.prev ? '' : html`<a rel="prev" href="${v.base}jobs?${toQuery(p, { before: d.prev })}">← Newer</a>`}
      ${p.id || !d.next ? '' : html`<a rel="next" href="${v.base}jobs?${toQuery(p, { after: d.next })}">Older →</a>`}
    </p>
  </div>`;
  return layout(v, 'Jobs', 'jobs', body);
}
