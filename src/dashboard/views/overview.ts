/** The overview page: per-queue counts, the oldest due job, throughput charts, live supervisors. */
import { html } from 'hono/html';
import { OVERVIEW_CAP, type Overview } from '../../queue/admin/index.ts';
import { throughputChart, type Bucket } from './chart.ts';
import { unservedQueues } from '../../queue/admin/index.ts';
import { age, count, flash, layout, type ViewContext } from './layout.ts';
import { queueControls, queuePath } from './queue_controls.ts';
import { supervisorsTable } from './supervisors.ts';
import { unservedWarning } from './unserved.ts';

/** The admin overview and the two throughput charts. */
export interface OverviewData extends Overview {
  hour: Bucket[];
  day: Bucket[];
  /** A redirect's message key (FLASH), and the queue it was about. */
  flash?: string;
  flashQueue?: string;
}

export function overviewPage(v: ViewContext, d: OverviewData) {
  const jobs = (q: Record<string, string>) => `${v.base}jobs?${new URLSearchParams(q).toString()}`;
  const unserved = unservedQueues(
    d.queues.map((q) => q.queue),
    d.supervisors,
  );
  // Only a queue with jobs waiting needs the warning; the badge marks every unserved row.
  const waiting = d.queues.filter((q) => unserved.has(q.queue) && q.pending > 0).map((q) => q.queue);
  const body = html`<div data-refresh="10" data-live="overview">
    <h1>Overview</h1>
    ${flash(d.flash, d.flashQueue ? `(queue ${d.flashQueue})` : undefined)} ${unservedWarning(waiting)}
    <p class="actions">
      <button type="button" id="refresh-toggle" hidden>Pause auto-refresh</button>
    </p>
    <div class="cards">
      <div class="card" title="paused queues are not counted">
        Oldest due job waits <b id="oldest-due">${age(d.oldestDueAgeSeconds)}</b>
      </div>
      <div class="card">
        Dead letters <b><a href="${v.base}dead-letters">${count(d.queues.reduce((n, q) => n + q.dead, 0))}</a></b>
      </div>
      <div class="card">Supervisors alive <b>${d.supervisors.length}</b></div>
    </div>
    <h2>Queues</h2>
    ${
      d.capped
        ? html`<p class="muted" id="capped">
            Some counts are lower bounds: the overview reads at most ${count(OVERVIEW_CAP)} rows per status.
          </p>`
        : ''
    }
    <table id="queues" class="stack">
      <thead>
        <tr>
          <th>Queue</th>
          <th class="num">Pending</th>
          <th class="num">Due now</th>
          <th class="num">Running</th>
          <th class="num" title="waiting for their parents">Blocked</th>
          <th class="num">Dead letters</th>
          <th class="num">Done (last hour)</th>
          ${v.readOnly ? '' : html`<th></th>`}
        </tr>
      </thead>
      <tbody>
        ${
          d.queues.length === 0
            ? html`<tr>
                <td colspan="8" class="muted">No jobs yet.</td>
              </tr>`
            : ''
        }
        ${d.queues.map(
          (q) =>
            html`<tr>
              <td>
                <a href="${queuePath(v, q.queue)}">${q.queue}</a>${
                  unserved.has(q.queue)
                    ? html` <span class="status status-unserved" title="no live supervisor has this queue in its config"
                        >no supervisor</span
                      >`
                    : ''
                }${
                  q.paused
                    ? html` <span class="status status-paused" title="paused cluster-wide: no job of it starts"
                        >paused</span
                      >`
                    : ''
                }
              </td>
              <td class="num" data-label="Pending">
                <a href="${jobs({ queue: q.queue, status: 'pending' })}">${count(q.pending)}</a>
              </td>
              <td class="num" data-label="Due now">${count(q.due)}</td>
              <td class="num" data-label="Running">
                <a href="${jobs({ queue: q.queue, status: 'running' })}">${count(q.running)}</a>
              </td>
              <td class="num" data-label="Blocked">
                <a href="${jobs({ queue: q.queue, status: 'blocked' })}">${count(q.blocked)}</a>
              </td>
              <td class="num" data-label="Dead letters">
                <a href="${jobs({ queue: q.queue, status: 'failed' })}">${count(q.dead)}</a>
              </td>
              <td class="num" data-label="Done (last hour)">${count(q.doneLastHour)}</td>
              ${v.readOnly ? '' : html`<td>${queueControls(v, q.queue, q.paused, 'overview')}</td>`}
            </tr>`,
        )}
      </tbody>
    </table>
    <h2>Throughput</h2>
    ${throughputChart('Last hour, per minute', d.hour)} ${throughputChart('Last day, per 15 minutes', d.day)}
    <h2>Supervisors</h2>
    ${supervisorsTable(d.supervisors)}
  </div>`;
  return layout(v, 'Overview', '', body);
}
