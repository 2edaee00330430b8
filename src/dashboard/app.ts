/**
 * createDashboard: the dashboard as a request handler to mount in any Node
 * HTTP server (or Express/Connect, which pass `next`: requests outside
 * basePath go on to it), and as a web-standard `fetch` handler.
 *
 * Every request passes, in order: security headers (Hono's secure-headers: a
 * CSP without inline script or style, no framing, same-origin referrers) →
 * without a token, the Host check against DNS rebinding (hosts.ts) → static
 * assets → login
 * and logout → the credential check → for POSTs, the same-site check and then
 * read-only mode (403) → the page or action.
 */
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie } from 'hono/cookie';
import { secureHeaders } from 'hono/secure-headers';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type pg from 'pg';
import type { Schedule } from '../config/index.ts';
import { DEFAULT_REDACT } from '../config/dashboard.ts';
import { notMigrated } from '../errors.ts';
import { secretKeyNames } from '../secrets.ts';
import type { Logger } from '../log.ts';
import { createAuth, SESSION_COOKIE } from './auth.ts';
import { checkedDashboardOptions } from './checked_options.ts';
import { dashboardDb, DASHBOARD_STATEMENT_TIMEOUT_MS } from './db.ts';
import { refuseHost } from './hosts.ts';
import { refuseCrossSite } from './origin.ts';
import { actionRoutes } from './routes/actions.ts';
import { loginRoutes } from './routes/login.ts';
import { pageRoutes, STATEMENT_TIMEOUT } from './routes/pages.ts';
import { queueRoutes } from './routes/queues.ts';
import { signalRoutes } from './routes/signal.ts';
import { workflowRoutes } from './routes/workflow.ts';
import { SCRIPT, STYLE } from './static.ts';
import { messagePage } from './views/message.ts';
import type { ViewContext } from './views/layout.ts';

export { normaliseBasePath } from './checked_options.ts';

/**
 * The options of createDashboard: the pool it reads and acts through (give it
 * a role that may read and update `jobvisor.jobs`), where it is mounted, who may
 * use it (a token, by default from JOBVISOR_DASHBOARD_TOKEN), and what it hides.
 */
export interface DashboardOptions {
  pool: pg.Pool;
  /** Path prefix, such as "/jobvisor" (default "/"). */
  basePath?: string;
  /** Refuse every action with 403 (default false). */
  readOnly?: boolean;
  /**
   * `{ token }` to require it; `false` for an open dashboard (a loopback
   * development server). Default: the token of JOBVISOR_DASHBOARD_TOKEN(_FILE);
   * when neither is set, createDashboard throws rather than serve an open
   * dashboard by accident.
   */
  auth?: { token: string } | false;
  /**
   * Without a token: host names served besides localhost, 127.0.0.0/8 and
   * [::1] (any other Host gets 403, against DNS rebinding). Ignored with a token.
   */
  allowedHosts?: string[];
  /** Payload keys shown as [redacted], each also without `_` or with `-` (default: secrets.ts SECRET_KEYS). */
  redact?: string[];
  /** Cron schedules for the Schedules page (the configuration's `schedules`). */
  schedules?: Schedule[];
  /** Database schema of the jobs table (default "jobvisor"). */
  schema?: string;
  /** Bound on each statement (default 5,000 ms). */
  statementTimeoutMs?: number;
  log?: Logger;
}

/**
 * The dashboard as createDashboard returns it: a Node request listener (for
 * `http.createServer`, or Express/Connect, which pass `next` for requests
 * outside `basePath`), with the same app as a web-standard `fetch` handler.
 */
export type DashboardHandler = ((req: IncomingMessage, res: ServerResponse, next?: () => void) => void) & {
  /** The same dashboard as a web-standard fetch handler. */
  fetch: (request: Request) => Response | Promise<Response>;
  basePath: string;
};

// Hono's secure-headers, with a CSP that allows no inline script or style (the
// one script and stylesheet are served from the dashboard's own path). Its
// default HSTS is left off: the dashboard does not know whether it is served
// over https (a loopback http server would be poisoned for a year).
const SECURITY_HEADERS = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  xFrameOptions: 'DENY',
  referrerPolicy: 'same-origin',
  strictTransportSecurity: false,
});

/**
 * Builds the web dashboard (jobs, dead letters, schedules, workflows, queue
 * controls, the retry/cancel/run-now/delete actions, and sending a job a
 * signal) as a handler to mount
 * in the app's own HTTP server. Every request gets security headers, the Host
 * check (without a token), the credential check and, for actions, the
 * same-site check and read-only mode. It starts no server and no timer.
 *
 * @param options The pool, `basePath`, `auth`, `readOnly`, `redact`, `schedules`, ….
 * @returns A Node request listener that also has `fetch` and `basePath`.
 * @throws TypeError when `basePath` is not a path, or when no token is given
 *   (neither `auth` nor JOBVISOR_DASHBOARD_TOKEN(_FILE)) and `auth` is not `false`.
 *
 * @example
 * ```ts
 * import http from 'node:http';
 * const dashboard = createDashboard({ pool, basePath: '/jobs-admin', auth: { token: process.env.ADMIN_TOKEN! } });
 * http.createServer(dashboard).listen(9465, '127.0.0.1');
 * ```
 */
export function createDashboard(options: DashboardOptions): DashboardHandler {
  const { basePath, token } = checkedDashboardOptions(options);
  const base = basePath === '/' ? '/' : `${basePath}/`;
  const auth = createAuth(token);
  const view: ViewContext = { base, readOnly: options.readOnly ?? false, authRequired: auth.required };
  const schema = options.schema ?? 'jobvisor';
  const db = dashboardDb(options.pool, schema, options.statementTimeoutMs ?? DASHBOARD_STATEMENT_TIMEOUT_MS);

  const root = new Hono({ strict: false });
  const app = basePath === '/' ? root : root.basePath(basePath);
  app.use(SECURITY_HEADERS);
  app.use(async (c, next) => {
    await next();
    c.res.headers.set('Cache-Control', 'no-store');
  });
  if (token === null) {
    const allowedHosts = options.allowedHosts ?? [];
    app.use(async (c, next) => {
      const why = refuseHost(c.req.header('host'), allowedHosts);
      if (why === null) return next();
      options.log?.warn({ reason: why, path: c.req.path }, 'open dashboard refused a request for another host');
      return c.text(
        `Refused: ${why}. This dashboard has no token, so it answers only on localhost, 127.0.0.1 and [::1]; ` +
          'add other names to dashboard.allowedHosts, or set JOBVISOR_DASHBOARD_TOKEN.\n',
        403,
      );
    });
  }
  app.get('/static/app.js', (c) => c.body(SCRIPT, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }));
  app.get('/static/app.css', (c) => c.body(STYLE, 200, { 'Content-Type': 'text/css; charset=utf-8' }));
  app.use(bodyLimit({ maxSize: 64 * 1024, onError: (c) => c.text('request body too large', 413) }));
  // Every state-changing request, login included, must come from a page of this site.
  // Not Hono's csrf middleware: it checks form content types only, compares the
  // Origin with the request URL's (the ingress' internal host behind a proxy,
  // where X-Forwarded-Host names the public one) and has no Referer fallback;
  // origin.ts does all three (see test/dashboard_http.test.ts).
  app.use(async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const why = refuseCrossSite({
      origin: c.req.header('origin'),
      referer: c.req.header('referer'),
      host: c.req.header('host'),
      forwardedHost: c.req.header('x-forwarded-host'),
    });
    if (why) {
      options.log?.warn({ reason: why, path: c.req.path }, 'dashboard refused a cross-site request');
      return c.html(messagePage(view, 'Refused', `This request did not come from the dashboard (${why}).`), 403);
    }
    return next();
  });
  loginRoutes(app, { view, auth });
  app.use(async (c, next) => {
    if (auth.check(c.req.header('authorization'), getCookie(c, SESSION_COOKIE))) return next();
    if (c.req.method === 'GET' && !c.req.header('authorization')) {
      const url = new URL(c.req.url);
      return c.redirect(`${base}login?next=${encodeURIComponent(url.pathname + url.search)}`, 303);
    }
    return c.html(messagePage(view, 'Not logged in', 'A valid dashboard token is required.'), 401, {
      'WWW-Authenticate': 'Bearer realm="jobvisor"',
    });
  });
  app.use(async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && view.readOnly)
      return c.html(messagePage(view, 'Read-only', 'This dashboard is read-only: actions are turned off.'), 403);
    return next();
  });
  // Every spelling of each name (api_key, apikey, api-key), for the pages and the text filter alike.
  const redact = secretKeyNames(options.redact ?? DEFAULT_REDACT);
  pageRoutes(app, { view, db, redact, schedules: options.schedules ?? [] });
  actionRoutes(app, { view, db, redact });
  signalRoutes(app, { view, db });
  queueRoutes(app, { view, db });
  workflowRoutes(app, { view, db });
  app.notFound((c) => c.html(messagePage(view, 'Not found', 'There is no such page.'), 404));
  root.notFound((c) => c.html(messagePage(view, 'Not found', 'There is no such page.'), 404));
  const onError = (err: Error & { code?: string }, c: Parameters<Parameters<typeof app.onError>[0]>[1]) => {
    // A database `jobvisor migrate` has not prepared: say so, not pg's `relation … does not exist`.
    const unmigrated = notMigrated(err, schema);
    if (unmigrated) return c.html(messagePage(view, 'Not migrated', unmigrated.message), 503);
    if (err.code === STATEMENT_TIMEOUT)
      return c.html(
        messagePage(view, 'Too slow', 'The database did not answer within the dashboard’s statement timeout.'),
        503,
      );
    options.log?.error({ err, path: c.req.path }, 'dashboard request failed');
    return c.html(messagePage(view, 'Error', 'The request failed; the dashboard log has the details.'), 500);
  };
  app.onError(onError);
  root.onError(onError);

  const listener = getRequestListener(root.fetch);
  const handler = ((req: IncomingMessage, res: ServerResponse, next?: () => void) => {
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    if (next && basePath !== '/' && path !== basePath && !path.startsWith(base)) return next();
    void listener(req, res);
  }) as DashboardHandler;
  handler.fetch = (request: Request) => root.fetch(request);
  handler.basePath = basePath;
  return handler;
}
