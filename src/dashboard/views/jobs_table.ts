/**
 * The jobs table with a checkbox per row. The checkboxes belong to the
 * "selected" form (form="selection"), so the bulk buttons act on exactly the
 * rows ticked, with or without the script; the script adds "select all".
 */
import { html } from 'hono/html';
import type { JobRow } from '../../queue/admin/index.ts';
import { shownStatus } from './applicable.ts';
import { status, time, type ViewContext } from './layout.ts';

export function jobsTable(v: ViewContext, jobs: JobRow[], selectable: boolean) {
  const now = Date.now();
  return html`<div class="scroll">
    <table id="jobs" class="stack">
      <thead>
        <tr>
          ${
            selectable
              ? html`<th>
                  <input type="checkbox" id="select-all" aria-label="Select every row of this page" hidden />
                </th>`
              : ''
          }
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
          jobs.length === 0
            ? html`<tr>
                <td colspan="9" class="muted">No job matches.</td>
              </tr>`
            : ''
        }
        ${jobs.map(
          (j) =>
            html`<tr>
              ${
                selectable
                  ? html`<td>
                      <input
                        type="checkbox"
                        name="ids"
                        value="${j.id}"
                        form="selection"
                        class="select-row"
                        aria-label="Select job ${j.id}"
                      />
                    </td>`
                  : ''
              }
              <td data-label="Id"><a href="${v.base}jobs/${j.id}">${j.id}</a></td>
              <td data-label="Kind">${j.kind}</td>
              <td data-label="Queue">${j.queue}</td>
              <td data-label="Status">${status(shownStatus(j, now))}</td>
              <td data-label="Attempts" class="num">${j.attempts}/${j.max_attempts}</td>
              <td data-label="Run at">${time(j.run_at)}</td>
              <td data-label="Created">${time(j.created_at)}</td>
              <td data-label="Last error" class="err">${firstLine(j.last_error)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function firstLine(s: string | null): string {
  if (!s) return '';
  const line = s.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
