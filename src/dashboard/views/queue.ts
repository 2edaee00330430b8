/**
 * One queue: pause/resume, jobs by status, each live supervisor's settings for
 * it, and its limits (global, per key, rate) against what is in use now.
 */
import { html } from 'hono/html';
import type { QueueConfig, QueueDetail } from '../../queue/admin/index.ts';
import { age, count, flash, layout, time, type Html, type ViewContext } from './layout.ts';
import { queueControls } from './queue_controls.ts';
import { unservedWarning } from './unserved.ts';

function limit(n: number | undefined): string {
  return n === undefined ? 'none' : count(n);
}

function rate(c: Partial<QueueConfig>): string {
  const r = c.rateLimit;
  return r ? `${count(r.count)} per ${age(r.periodMs / 1000)}${r.perKey ? ' per key' : ''}` : 'none';
}

/** The settings every serving supervisor agrees on, or "differs" (a rollout half done). */
function agreed<T>(d: QueueDetail, pick: (c: Partial<QueueConfig>) => T): T | 'differs' | undefined {
  const values = new Set(d.supervisors.map((s) => JSON.stringify(pick(s.config) ?? null)));
  if (values.size === 0) return undefined;
  if (values.size > 1) return 'differs';
  return pick(d.supervisors[0]?.config ?? {});
}

function keyTable(id: string, rows: Array<{ key: string; n: number }>, what: string, max: string): Html {
  if (rows.length === 0) return html`<p class="muted" id="${id}">None now.</p>`;
  return html`<table id="${id}" class="stack">
    <thead>
      <tr>
        <th>Key</th>
        <th class="num">${what}</th>
        <th class="num">Limit</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr>
            <td>${r.key === '' ? html`<span class="muted">(whole queue)</span>` : r.key}</td>
            <td class="num">${count(r.n)}</td>
            <td class="num">${max}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function queuePage(v: ViewContext, d: QueueDetail, flashKey?: string) {
  const jobs = (q: Record<string, string>) =>
    `${v.base}jobs?${new URLSearchParams({ queue: d.queue, ...q }).toString()}`;
  const c = d.counts;
  const global = agreed(d, (x) => x.globalConcurrency);
  const perKey = agreed(d, (x) => x.perKeyConcurrency);
  const rateText = agreed(d, (x) => rate(x));
  const shown = (x: unknown) => (x === 'differs' ? 'differs between supervisors' : limit(x as number | undefined));
  const inFlightConfigured = d.supervisors.reduce((n, s) => n + s.config.concurrency, 0);
  const body = html`<div data-refresh="10" data-live="queue">
    <h1>
      Queue ${d.queue}
      ${d.paused ? html`<span class="status status-paused" id="queue-state">paused</span>` : html`<span class="status status-running" id="queue-state">active</span>`}
    </h1>
    ${flash(flashKey)} ${unservedWarning(d.supervisors.length === 0 ? [d.queue] : [])}
    <div class="actions">
      ${queueControls(v, d.queue, d.paused, 'queue')}
      <button type="button" id="refresh-toggle" hidden>Pause auto-refresh</button>
    </div>
    <h2>Jobs by status</h2>
    ${d.capped ? html`<p class="muted">Some counts are lower bounds (the overview's cap).</p>` : ''}
    <dl class="facts" id="queue-counts">
      <dt>Due now</dt>
      <dd><a href="${jobs({ status: 'pending' })}">${count(c.due)}</a></dd>
      <dt>Scheduled (not yet due)</dt>
      <dd><a href="${jobs({ status: 'scheduled' })}">${count(c.pending - c.due)}</a></dd>
      <dt>Running</dt>
      <dd><a href="${jobs({ status: 'running' })}">${count(c.running)}</a></dd>
      <dt>Blocked (waiting for parents)</dt>
      <dd><a href="${jobs({ status: 'blocked' })}">${count(c.blocked)}</a></dd>
      <dt>Dead letters</dt>
      <dd><a href="${jobs({ status: 'failed' })}">${count(c.dead)}</a></dd>
      <dt>Done (last hour)</dt>
      <dd><a href="${jobs({ status: 'done' })}">${count(c.doneLastHour)}</a></dd>
    </dl>
    <h2>Limits and use</h2>
    <dl class="facts" id="queue-limits">
      <dt>Concurrency in use</dt>
      <dd id="in-use">
        ${count(c.running)} running, of ${count(inFlightConfigured)} configured across ${count(d.supervisors.length)}
        supervisor${d.supervisors.length === 1 ? '' : 's'}
      </dd>
      <dt>Global concurrency</dt>
      <dd id="limit-global">${global === undefined ? '—' : `${count(c.running)} of ${shown(global)}`}</dd>
      <dt>Per-key concurrency</dt>
      <dd id="limit-per-key">${perKey === undefined ? '—' : shown(perKey)}</dd>
      <dt>Rate limit</dt>
      <dd id="limit-rate">${rateText ?? '—'}${rateText === 'differs' ? ' between supervisors' : ''}</dd>
    </dl>
    <h3>Running jobs per key (busiest ${count(10)})</h3>
    ${keyTable(
      'running-by-key',
      d.runningByKey.map((r) => ({ key: r.key, n: r.running })),
      'Running',
      typeof perKey === 'number' ? count(perKey) : '—',
    )}
    ${
      d.ratePeriodMs === null
        ? ''
        : html`<h3>Starts in the last ${age(d.ratePeriodMs / 1000)}</h3>
            ${keyTable(
              'recent-starts',
              d.recentStarts.map((r) => ({ key: r.key, n: r.starts })),
              'Starts',
              typeof rateText === 'string' ? rateText : '—',
            )}`
    }
    <h2>Supervisors serving it</h2>
    <table id="queue-supervisors" class="stack">
      <thead>
        <tr>
          <th>Supervisor</th>
          <th class="num">Concurrency</th>
          <th class="num">Jobs per thread</th>
          <th class="num">Prefetch</th>
          <th>Timeout</th>
          <th class="num">Global</th>
          <th class="num">Per key</th>
          <th>Rate</th>
          <th>Last heartbeat</th>
        </tr>
      </thead>
      <tbody>
        ${
          d.supervisors.length === 0
            ? html`<tr>
                <td colspan="9" class="muted">None.</td>
              </tr>`
            : ''
        }
        ${d.supervisors.map(({ supervisor: s, config }) => {
          const full: Partial<QueueConfig> = config;
          return html`<tr>
            <td>${s.id}<br /><span class="muted">${s.host} · ${s.version}</span></td>
            <td class="num">${count(full.concurrency ?? 0)}</td>
            <td class="num">${full.jobsPerThread ?? '—'}</td>
            <td class="num">${full.prefetch ?? '—'}</td>
            <td>
              ${full.timeoutMs === undefined ? '—' : full.timeoutMs === null ? 'jobs.timeout' : age(full.timeoutMs / 1000)}
            </td>
            <td class="num">${limit(full.globalConcurrency)}</td>
            <td class="num">${limit(full.perKeyConcurrency)}</td>
            <td>${rate(full)}</td>
            <td>${time(s.heartbeat_at)}</td>
          </tr>`;
        })}
      </tbody>
    </table>
  </div>`;
  return layout(v, `Queue ${d.queue}`, '', body);
}
