/**
 * `jobvisor dashboard [--port N] [--host H]`: serves the web dashboard until
 * SIGTERM/SIGINT. The token comes from JOBVISOR_DASHBOARD_TOKEN(_FILE) only;
 * a non-loopback host without one is refused (exit 2, one line).
 */
import { loadConfig } from '../config/index.ts';
import { serveDashboard, checkExposure } from '../dashboard/server.ts';
import { readDashboardToken } from '../dashboard/token.ts';
import { createPool } from '../db/pool.ts';
import { DASHBOARD_STATEMENT_TIMEOUT_MS } from '../dashboard/db.ts';
import { integer, parseFlags } from './args.ts';
import { openContext } from './context.ts';

/** Connections of the dashboard's own pool: pages run a few statements each, one request at a time per client. */
const DASHBOARD_POOL_SIZE = 4;

export async function dashboardCommand(argv: string[]): Promise<number> {
  const values = parseFlags(argv, { port: { type: 'string' }, host: { type: 'string' } }, 'dashboard');
  const settings = loadConfig();
  const port = integer('--port', values.port as string | undefined, 0, 65_535) ?? settings.dashboard.port;
  const host = (values.host as string | undefined) ?? settings.dashboard.host;
  const token = readDashboardToken();
  checkExposure(host, token);
  const ctx = await openContext({ logTo: 1, settings });
  const pool = createPool(ctx.databaseUrl, {
    max: DASHBOARD_POOL_SIZE,
    log: ctx.log,
    applicationName: 'jobvisor-dashboard',
    statementTimeoutMs: DASHBOARD_STATEMENT_TIMEOUT_MS,
  });
  const http = await serveDashboard({ settings, pool, token, host, port, log: ctx.log });
  ctx.log.info(
    {
      host,
      port: http.port,
      basePath: settings.dashboard.basePath,
      readOnly: settings.dashboard.readOnly,
      auth: token ? 'token' : 'none (loopback)',
    },
    'dashboard listening',
  );
  return new Promise<number>((resolve) => {
    const stop = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      void (async () => {
        await http.close();
        await pool.end().catch(() => {});
        await ctx.close();
        resolve(0);
      })();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
