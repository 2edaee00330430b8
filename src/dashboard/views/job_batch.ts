/** The job page's batch section: the other jobs of the batch call this job last ran in, each linked. */
import { html } from 'hono/html';
import type { BatchCallJobs } from '../../queue/admin/index.ts';
import { count, status, type Html, type ViewContext } from './layout.ts';

/** Nothing for a job that never ran in a batch call. */
export function batchSection(v: ViewContext, jobId: string, call: BatchCallJobs | null): Html {
  if (!call) return html``;
  return html`<h2>Batch call</h2>
    <p id="batch-call">
      Ran in call ${call.batchId} with ${count(call.total - 1)} other job${call.total === 2 ? '' : 's'}:
      ${Object.entries(call.byStatus).map(([st, n]) => html`${status(st)} ${count(n)} `)}
    </p>
    <table id="batch-jobs" class="stack">
      <thead>
        <tr>
          <th>Job</th>
          <th>Kind</th>
          <th>Queue</th>
          <th>Status</th>
        </tr>
      </thead>
      <tbody>
        ${call.jobs.map(
          (j) =>
            html`<tr>
              <td>${j.id === jobId ? html`${j.id} (this job)` : html`<a href="${v.base}jobs/${j.id}">${j.id}</a>`}</td>
              <td data-label="Kind">${j.kind}</td>
              <td data-label="Queue">${j.queue}</td>
              <td data-label="Status">${status(j.status)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${
      call.total > call.jobs.length
        ? html`<p class="muted">Showing ${count(call.jobs.length)} of ${count(call.total)}, by id.</p>`
        : ''
    }`;
}
