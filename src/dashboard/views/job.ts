/**
 * One job: facts, owner and lease, its steps, the redacted payload, its status
 * timeline, and its actions (sending a signal among them).
 */
import { html } from 'hono/html';
import type { BatchCallJobs, JobDetail, Relations, StepRow } from '../../queue/admin/index.ts';
import { attemptsOf } from '../../queue/admin/index.ts';
import { applies, shownStatus } from './applicable.ts';
import { attemptsTable } from './attempts.ts';
import { batchSection } from './job_batch.ts';
import { relationsSection } from './job_relations.ts';
import { signalForm, stepsSection } from './job_steps.ts';
import { flash, layout, status, time, type ViewContext } from './layout.ts';

const ACTIONS = [
  ['retry', 'Retry', false],
  ['cancel', 'Cancel', false],
  ['run-now', 'Run now', false],
  ['delete', 'Delete', true],
] as const;

export function jobPage(
  v: ViewContext,
  job: JobDetail,
  relations: Relations,
  payload: unknown,
  flashKey?: string,
  batch: BatchCallJobs | null = null,
  steps: readonly StepRow[] = [],
) {
  const body = html`<div data-refresh="5">
      <h1>Job ${job.id} ${status(shownStatus(job))}</h1>
      ${flash(flashKey)}
      ${
        v.readOnly
          ? ''
          : html`<div class="actions">
              ${ACTIONS.filter(([action]) => applies(action, job)).map(
                ([action, label, danger]) =>
                  html`<form
                    method="post"
                    action="${v.base}jobs/${job.id}/${action}"
                    ${danger ? html`data-confirm="Delete job ${job.id}?"` : ''}
                  >
                    <button type="submit" class="${danger ? 'danger' : ''}">${label}</button>
                  </form>`,
              )}
              <button type="button" id="refresh-toggle" hidden>Pause auto-refresh</button>
            </div>`
      }
      <dl class="facts">
        <dt>Kind</dt>
        <dd id="kind">${job.kind}</dd>
        <dt>Queue</dt>
        <dd>${job.queue}</dd>
        <dt>Priority</dt>
        <dd>${job.priority}</dd>
        <dt>Attempts</dt>
        <dd>${job.attempts} of ${job.max_attempts}</dd>
        <dt>Run at</dt>
        <dd>${time(job.run_at)}</dd>
        <dt>Unique key</dt>
        <dd>${job.unique_key ?? '—'}</dd>
        <dt>Owner</dt>
        <dd id="owner">${job.locked_by ?? '—'}</dd>
        <dt>Lease until</dt>
        <dd>${time(job.locked_until)}</dd>
        <dt>Created</dt>
        <dd>${time(job.created_at)}</dd>
        <dt>Started</dt>
        <dd>${time(job.started_at)}</dd>
        <dt>Finished</dt>
        <dd>${time(job.finished_at)}</dd>
      </dl>
      ${relationsSection(v, job.id, relations)} ${batchSection(v, job.id, batch)} ${stepsSection(job, steps)}
      <h2>Last error</h2>
      ${job.last_error ? html`<pre class="err" id="last-error">${job.last_error}</pre>` : html`<p class="muted">None.</p>`}
      <h2>Attempts</h2>
      ${attemptsTable(attemptsOf(job))}
      <h2>Timeline</h2>
      <table id="timeline" class="stack">
        <thead>
          <tr>
            <th>At</th>
            <th>Event</th>
            <th class="num">Attempt</th>
            <th>Error</th>
          </tr>
        </thead>
        <tbody>
          ${job.timeline.map(
            (e) =>
              html`<tr>
                <td>${time(e.at)}</td>
                <td>${e.event}</td>
                <td class="num">${e.attempt ?? ''}</td>
                <td class="err">${e.error ?? ''}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      <h2>Payload</h2>
      <pre id="payload">${JSON.stringify(payload, null, 2)}</pre>
      <h2>Progress</h2>
      <pre id="progress">${job.progress === null ? '-' : JSON.stringify(job.progress, null, 2)}</pre>
      <h2>Result</h2>
      <pre id="result">${job.result === null ? '-' : JSON.stringify(job.result, null, 2)}</pre>
    </div>
    ${signalForm(v, job, steps)}`;
  return layout(v, `Job ${job.id}`, 'jobs', body);
}
