/**
 * The page frame and the small formatters every view shares. Views are
 * hono/html tagged templates: every interpolated value is HTML-escaped (quotes
 * included), so data can only ever land in text or in a quoted attribute. No
 * view builds an event handler, a script or a style from data; the one script
 * is a static file (../static.ts) allowed by the Content-Security-Policy.
 */
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** What every view needs to know about the dashboard it is part of. */
export interface ViewContext {
  /** basePath, ending in "/". */
  base: string;
  readOnly: boolean;
  /** A token is configured (a "Log out" button is shown). */
  authRequired: boolean;
}

const NAV = [
  ['', 'Overview'],
  ['jobs', 'Jobs'],
  ['dead-letters', 'Dead letters'],
  ['schedules', 'Schedules'],
] as const;

export function layout(v: ViewContext, title: string, here: string, body: Html): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · jobvisor</title>
        <link rel="stylesheet" href="${v.base}static/app.css" />
        <script src="${v.base}static/app.js" defer></script>
      </head>
      <body>
        <header>
          <a class="brand" href="${v.base}">jobvisor</a>
          ${NAV.map(([path, label]) => html`<a href="${v.base}${path}" class="${here === path ? 'on' : ''}">${label}</a>`)}
          ${v.readOnly ? html`<span class="muted">read-only</span>` : ''}
          ${
            v.authRequired
              ? html`<form method="post" action="${v.base}logout"><button type="submit">Log out</button></form>`
              : ''
          }
        </header>
        <main>${body}</main>
      </body>
    </html>`;
}

const NUMBER = new Intl.NumberFormat('en-US');

export function count(n: number): string {
  return NUMBER.format(n);
}

/** A timestamp as ISO text (UTC), or a dash. Plain SQL may store ±infinity. */
export function time(t: Date | string | null | undefined): string {
  if (t === null || t === undefined) return '—';
  if (typeof t === 'string') return t;
  return Number.isNaN(t.getTime())
    ? '—'
    : t
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');
}

/** A duration in seconds, short: 42s, 3m 5s, 2h 10m, 4d 3h. */
export function age(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

export function status(s: string): Html {
  return html`<span class="status status-${s}">${s}</span>`;
}

/**
 * Messages a redirect may ask a page to show: a fixed set, so no text travels
 * in the URL. An action that changed nothing says so as a warning, never as a success.
 */
export const FLASH: Record<string, { text: string; level: 'ok' | 'warn' }> = {
  retried: { text: 'Retried.', level: 'ok' },
  cancelled: { text: 'Cancelled.', level: 'ok' },
  'ran-now': { text: 'Set to run now.', level: 'ok' },
  deleted: { text: 'Deleted.', level: 'ok' },
  unchanged: { text: 'Nothing changed: the job was not in a state this action applies to.', level: 'warn' },
  'none-changed': { text: 'Nothing changed: none of these jobs was in a state this action applies to.', level: 'warn' },
  paused: { text: 'Paused: no job of this queue starts until it is resumed; running jobs finish.', level: 'ok' },
  resumed: { text: 'Resumed: supervisors serving this queue claim its jobs again.', level: 'ok' },
  'already-paused': { text: 'Nothing changed: the queue was already paused.', level: 'warn' },
  'already-running': { text: 'Nothing changed: the queue was not paused.', level: 'warn' },
  'signal-woke': { text: 'Signal sent: the job was waiting for it and runs now.', level: 'ok' },
  'signal-kept': { text: 'Signal sent: it is kept until the job waits for it.', level: 'ok' },
  'signal-duplicate': {
    text: 'Nothing changed: a signal of that name was sent to this job before (the first one stands).',
    level: 'warn',
  },
  'signal-late': { text: 'Nothing changed: the job’s wait for that signal has already timed out.', level: 'warn' },
};

export function flash(key: string | undefined, detail?: string): Html {
  const entry = key ? FLASH[key] : undefined;
  if (!entry) return html``;
  return html`<p class="flash ${entry.level}" role="status" data-level="${entry.level}">
    ${entry.text}${detail ? ` ${detail}` : ''}
  </p>`;
}
