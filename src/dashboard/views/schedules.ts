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
  /** IANA zone the cron is read in; null: UTC. */
  timezone?: string | null;
  next: Date[];
  lastJob: JobRow | null;
}

export function schedulesPage(v: ViewContext, schedules: ScheduleLine[]) {
  const body = html`<h1>Schedules</h1>
    <table id="schedules" class="stack">
      <thead>
        <tr>
          <th>Name</th>
          <th>Cron</th>
          <th>Kind</th>
          <th>Queue</th>
          <th>Time zone</th>
          <th>Next fire times</th>
          <th>Last fire's job</th>
        </tr>
      </thead>
      <tbody>
        ${
          schedules.length === 0
            ? html`<tr>
                <td colspan="7" class="muted">No schedules are configured (key "schedules").</td>
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
              <td>${s.timezone ?? 'UTC'}</td>
              <td class="fires">
                ${s.next.map((t) =>
                  s.timezone && s.timezone !== 'UTC'
                    ? html`<span title="${time(t)}">${inZone(t, s.timezone)}</span><br />`
                    : html`${time(t)}<br />`,
                )}
              </td>
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

/** `t` as wall-clock time in `zone` ("2026-03-29 03:00:00 CEST"), which the cron was written for. */
export function inZone(t: Date, zone: string): string {
  try {
    const parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'short',
    }).formatToParts(t);
    const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
    return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}:${get('second')} ${get('timeZoneName')}`;
  } catch {
    return time(t);
  }
}
