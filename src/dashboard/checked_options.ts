/**
 * What createDashboard checks before it builds anything: the base path and the
 * token. A file of its own, without Hono, so the package root's createDashboard
 * (lazy.ts) throws the same errors at the same moment as the real one.
 */
import { readDashboardToken } from './token.ts';

/** "/", or "/a/b" without a trailing slash. */
export function normaliseBasePath(basePath = '/'): string {
  if (!basePath.startsWith('/') || basePath.includes('//') || /[?#\\]/.test(basePath))
    throw new TypeError(`basePath must be a path starting with "/", got ${JSON.stringify(basePath)}`);
  return basePath === '/' ? '/' : basePath.replace(/\/+$/, '');
}

/**
 * The dashboard's base path and token (null: an open dashboard).
 * @throws TypeError for a base path that is not a path, or when no token is
 *   given and `auth` is not `false`; ConfigError for a bad token variable.
 */
export function checkedDashboardOptions(options: { basePath?: string; auth?: { token: string } | false }): {
  basePath: string;
  token: string | null;
} {
  const basePath = normaliseBasePath(options.basePath);
  if (options.auth === false) return { basePath, token: null };
  if (options.auth) return { basePath, token: options.auth.token };
  const token = readDashboardToken();
  if (token === null)
    throw new TypeError(
      'createDashboard: no JOBVISOR_DASHBOARD_TOKEN(_FILE) is set; pass auth: { token } or, for an open dashboard, auth: false',
    );
  return { basePath, token };
}
