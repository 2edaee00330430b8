/** The job page's workflow section: parents and dependents with their statuses, each linked, and the graph's link. */
import { html } from 'hono/html';
import type { RelatedJobs, Relations } from '../../queue/admin/index.ts';
import { count, status, type Html, type ViewContext } from './layout.ts';

function side(v: ViewContext, id: string, title: string, s: RelatedJobs): Html {
  if (s.total === 0)
    return html`<h3>${title}</h3>
      <p class="muted" id="${id}">None.</p>`;
  return html`<h3>
      ${title}: ${count(s.total)} ${Object.entries(s.byStatus).map(([st, n]) => html`${status(st)} ${count(n)} `)}
    </h3>
    <table id="${id}" class="stack">
      <thead>
        <tr>
          <th>Job</th>
          <th>Kind</th>
          <th>Queue</th>
          <th>Status</th>
        </tr>
      </thead>
      <tbody>
        ${s.jobs.map(
          (j) =>
            html`<tr>
              <td><a href="${v.base}jobs/${j.id}">${j.id}</a></td>
              <td data-label="Kind">${j.kind}</td>
              <td data-label="Queue">${j.queue}</td>
              <td data-label="Status">${status(j.status)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${
      s.total > s.jobs.length
        ? html`<p class="muted">Showing ${count(s.jobs.length)} of ${count(s.total)}, unfinished first.</p>`
        : ''
    }`;
}

/** Nothing for a job outside any workflow. */
export function relationsSection(v: ViewContext, jobId: string, r: Relations): Html {
  if (r.parents.total === 0 && r.dependents.total === 0) return html``;
  return html`<h2>Workflow</h2>
    <p><a href="${v.base}jobs/${jobId}/workflow" id="workflow-link">Workflow graph</a></p>
    ${side(v, 'parents', 'Parents', r.parents)} ${side(v, 'dependents', 'Dependents', r.dependents)}`;
}
