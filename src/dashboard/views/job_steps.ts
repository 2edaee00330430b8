/**
 * The job page's durable steps: what the job sleeps or waits for now, its
 * steps, sleeps and waits (ctx.step, ctx.sleep, ctx.waitFor) with their
 * attempt, start, end, duration and folded result, and the form that sends it
 * a signal. Results come already redacted (routes/pages.ts).
 */
import { html } from 'hono/html';
import type { JobDetail, StepRow } from '../../queue/admin/index.ts';
import { time, type Html, type ViewContext } from './layout.ts';

/** Statuses a signal can still reach: a finished, cancelled job refuses it. */
const SIGNALLABLE = new Set(['pending', 'running', 'blocked', 'waiting']);

/** The wait the job is parked in, or the sleep it is in (pending until its wake time), if either. `now` in ms. Pure. */
export function currentPark(
  job: Pick<JobDetail, 'status'>,
  steps: readonly StepRow[],
  now = Date.now(),
): { kind: 'wait' | 'sleep'; name: string; until: StepRow['wake_at'] } | null {
  if (job.status === 'waiting') {
    const wait = steps.find((s) => s.kind === 'wait' && s.finished_at === null);
    return wait ? { kind: 'wait', name: wait.name, until: wait.wake_at } : null;
  }
  if (job.status !== 'pending') return null;
  const sleep = steps
    .filter((s) => s.kind === 'sleep' && s.wake_at instanceof Date && s.wake_at.getTime() > now)
    .at(-1);
  return sleep ? { kind: 'sleep', name: sleep.name, until: sleep.wake_at } : null;
}

function duration(ms: number | null): string {
  if (ms === null) return '—';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

function outcome(s: StepRow): Html | string {
  if (s.kind === 'sleep') return html`<span class="muted">sleep until ${time(s.wake_at)}</span>`;
  if (s.kind === 'wait' && s.finished_at === null)
    return html`<span class="muted">waiting, deadline ${time(s.wake_at)}</span>`;
  return s.result === null ? html`<span class="muted">(no value)</span>` : html`<code>${s.result}</code>`;
}

/** Nothing for a job that never recorded a step, sleep or wait. */
export function stepsSection(job: Pick<JobDetail, 'status'>, steps: readonly StepRow[]): Html {
  if (steps.length === 0) return html``;
  const park = currentPark(job, steps);
  return html`<h2>Steps</h2>
    ${
      park === null
        ? ''
        : html`<p class="flash warn" id="parked">
            ${
              park.kind === 'wait'
                ? html`Waiting for signal <code>${park.name}</code> until ${time(park.until)} (then its wait times out).`
                : html`Sleeping at <code>${park.name}</code> until ${time(park.until)}.`
            }
          </p>`
    }
    <table id="steps" class="stack">
      <thead>
        <tr>
          <th>Name</th>
          <th>Kind</th>
          <th class="num">Attempt</th>
          <th>Started</th>
          <th>Finished</th>
          <th class="num">Duration</th>
          <th>Result</th>
        </tr>
      </thead>
      <tbody>
        ${steps.map(
          (s) =>
            html`<tr data-step="${s.name}">
              <td data-label="Name">${s.name}</td>
              <td data-label="Kind">${s.kind}</td>
              <td data-label="Attempt" class="num">${s.attempt}</td>
              <td data-label="Started">${time(s.started_at)}</td>
              <td data-label="Finished">${time(s.finished_at)}</td>
              <td data-label="Duration" class="num">${s.kind === 'step' ? duration(s.ms) : '—'}</td>
              <td data-label="Result" class="result">${outcome(s)}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

/**
 * The send-signal form, for a job a signal can still reach (outside the
 * auto-refreshed part of the page, so what is typed stays): the signal's name
 * (the one the job waits for, filled in) and an optional JSON payload.
 */
export function signalForm(v: ViewContext, job: Pick<JobDetail, 'id' | 'status'>, steps: readonly StepRow[]): Html {
  if (v.readOnly || !SIGNALLABLE.has(job.status)) return html``;
  const park = currentPark(job, steps);
  const name = park?.kind === 'wait' ? park.name : '';
  return html`<details class="signal" ${park?.kind === 'wait' ? 'open' : ''}>
    <summary>Send a signal</summary>
    <form method="post" action="${v.base}jobs/${job.id}/signal" id="signal-form" class="filters">
      <label>Name <input type="text" name="name" value="${name}" required maxlength="200" /></label>
      <label>Payload (JSON, optional) <textarea name="payload" rows="3" cols="40" spellcheck="false"></textarea></label>
      <button type="submit">Send signal</button>
    </form>
  </details>`;
}
