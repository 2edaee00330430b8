/**
 * The package root's createDashboard, kept for one minor version (deprecated:
 * import it from `jobvisor/dashboard`). It checks its options at once, as the
 * real one does, and loads the dashboard (Hono) on the first request, so an app
 * that imports the root to enqueue does not load hono.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DashboardHandler, DashboardOptions } from './app.ts';
import { checkedDashboardOptions } from './checked_options.ts';

/**
 * Builds the web dashboard as a handler to mount in the app's own HTTP server:
 * the same dashboard as `jobvisor/dashboard`'s createDashboard, whose code this
 * one loads on the first request.
 *
 * @deprecated Import createDashboard from `jobvisor/dashboard`; the package
 *   root's will be removed in 0.2.0.
 * @param options The pool, `basePath`, `auth`, `readOnly`, `redact`, `schedules`, ….
 * @returns A Node request listener that also has `fetch` and `basePath`.
 * @throws TypeError when `basePath` is not a path, or when no token is given
 *   (neither `auth` nor JOBVISOR_DASHBOARD_TOKEN(_FILE)) and `auth` is not `false`.
 */
export function createDashboard(options: DashboardOptions): DashboardHandler {
  const { basePath, token } = checkedDashboardOptions(options);
  const base = basePath === '/' ? '/' : `${basePath}/`;
  let loading: Promise<DashboardHandler> | undefined;
  const dashboard = () =>
    (loading ??= import('./app.ts').then((m) =>
      m.createDashboard({ ...options, auth: token === null ? false : { token } }),
    ));
  const handler = ((req: IncomingMessage, res: ServerResponse, next?: () => void) => {
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    if (next && basePath !== '/' && path !== basePath && !path.startsWith(base)) return next();
    dashboard().then(
      (real) => real(req, res, next),
      (err: unknown) => {
        options.log?.error({ err }, 'dashboard failed to load');
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('The dashboard failed to load.\n');
      },
    );
  }) as DashboardHandler;
  handler.fetch = async (request: Request) => (await dashboard()).fetch(request);
  handler.basePath = basePath;
  return handler;
}
