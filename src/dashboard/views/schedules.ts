/** Cron schedules: next fire times and the job of the last fire. */
import { html } from 'hono/html';
import type { JobRow } from '../../queue/admin/index.ts';
import { shownStatus } from './applicable.ts';
import { layout, status, time, type ViewContext } from './layout.ts';

export interface ScheduleLine {
  name: string;
  cron: string;
  kind: string;
  queue: string;
  next: Date[];
  lastJob: JobRow | null;
}

export function schedulesPage(v: ViewContext, schedules: ScheduleLine[]) {
  const body = html`<h1>Schedules</h1>
    <table id="schedules">
      <thead>
        <tr>
          <th>Name</th>
          <th>Cron</th>
          <th>Kind</th>
          <th>Queue</th>
          <th>Next fire times</th>
          <th>Last fire's job</th>
        </tr>
      </thead>
      <tbody>
        ${
          schedules.length === 0
            ? html`<tr>
                <td colspan="6" class="muted">No schedules are configured (key "schedules").</td>
              </tr>`
            : ''
        }
        ${schedules.map(
          (s) =>
            html`<tr>
              <td>${s.name}</td>
              <td><code>${s.cron}</code></td>
              <td>${s.kind}</td>
              <td>${s.queue}</td>
              <td>${s.next.map((t) => html`${time(t)}<br />`)}</td>
              <td>
                ${
                  s.lastJob
                    ? html`<a href="${v.base}jobs/${s.lastJob.id}">${s.lastJob.id}</a> ${status(shownStatus(s.lastJob))}
                        ${time(s.lastJob.created_at)}`
                    : html`<span class="muted">none yet</span>`
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>`;
  return layout(v, 'Schedules', 'schedules', body);
}
