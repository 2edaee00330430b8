/** The jobs list: filters kept in the URL, a capped count, keyset pages, bulk actions on the filter. */
import { html } from 'hono/html';
import type { JobRow } from '../../queue/admin/index.ts';
import { FILTER_FIELDS, isEmpty, STATUSES, toQuery, type FilterParams } from '../filter.ts';
import { count, flash, layout, status, time, type Html, type ViewContext } from './layout.ts';

export interface JobsData {
  params: FilterParams;
  jobs: JobRow[];
  next: string | null;
  /** Null when counting took longer than the statement bound (the list itself was read). */
  total: { count: number; capped: boolean } | null;
  flash?: string;
  flashDetail?: string;
}

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
  const bulk = (action: string, label: string, danger = false) =>
    html`<form method="post" action="${v.base}jobs/${action}">
      ${filterInputs(p)}<button type="submit" class="${danger ? 'danger' : ''}">${label} all matching</button>
    </form>`;
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
        ? html`<div class="actions">
            ${bulk('retry', 'Retry')} ${bulk('cancel', 'Cancel')} ${bulk('delete', 'Delete', true)}
          </div>`
        : ''
    }
    <table id="jobs">
      <thead>
        <tr>
          <th>Id</th>
          <th>Kind</th>
          <th>Queue</th>
          <th>Status</th>
          <th class="num">Attempts</th>
          <th>Run at</th>
          <th>Created</th>
          <th>Last error</th>
        </tr>
      </thead>
      <tbody>
        ${
          d.jobs.length === 0
            ? html`<tr>
                <td colspan="8" class="muted">No job matches.</td>
              </tr>`
            : ''
        }
        ${d.jobs.map(
          (j) =>
            html`<tr>
              <td><a href="${v.base}jobs/${j.id}">${j.id}</a></td>
              <td>${j.kind}</td>
              <td>${j.queue}</td>
              <td>${status(j.status)}</td>
              <td class="num">${j.attempts}/${j.max_attempts}</td>
              <td>${time(j.run_at)}</td>
              <td>${time(j.created_at)}</td>
              <td class="err">${firstLine(j.last_error)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    <p class="pager">
      ${p.id || !d.next ? '' : html`<a rel="next" href="${v.base}jobs?${toQuery(p, { after: d.next })}">Older →</a>`}
    </p>
  </div>`;
  return layout(v, 'Jobs', 'jobs', body);
}

function firstLine(s: string | null): string {
  if (!s) return '';
  const line = s.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
