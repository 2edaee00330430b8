/** The job page's attempts: each one's start, end, duration, owner, error and (folded) stack. */
import { html } from 'hono/html';
import type { Attempt } from '../../queue/admin/index.ts';
import { age, status, time } from './layout.ts';

function took(ms: number | null): string {
  if (ms === null) return '—';
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : age(ms / 1000);
}

export function attemptsTable(attempts: Attempt[]) {
  if (attempts.length === 0) return html`<p class="muted" id="attempts">Not started yet.</p>`;
  return html`<div class="scroll">
    <table id="attempts" class="stack">
      <thead>
        <tr>
          <th class="num">Attempt</th>
          <th>Outcome</th>
          <th>Started</th>
          <th>Ended</th>
          <th class="num">Took</th>
          <th>Supervisor</th>
          <th>Error</th>
        </tr>
      </thead>
      <tbody>
        ${attempts.map(
          (a) =>
            html`<tr>
              <td data-label="Attempt" class="num">${a.attempt}</td>
              <td data-label="Outcome">${status(a.outcome)}</td>
              <td data-label="Started">${time(a.started)}</td>
              <td data-label="Ended">${time(a.ended)}</td>
              <td data-label="Took" class="num">${took(a.durationMs)}</td>
              <td data-label="Supervisor">${a.owner ?? '—'}</td>
              <td data-label="Error" class="err">
                ${a.error ?? ''}
                ${
                  a.stack === null
                    ? ''
                    : html`<details class="stack">
                        <summary>stack</summary>
                        <pre>${a.stack}</pre>
                      </details>`
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
