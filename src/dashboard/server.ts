/**
 * The stand-alone dashboard server behind `jobvisor dashboard`: its own HTTP
 * port (never the metrics port, which must not show payloads) and its own
 * small pool. Binding a non-loopback address without a token is refused
 * before anything listens.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import type { Settings } from '../config/index.ts';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { createDashboard } from './app.ts';

/** Whether `host` only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** @throws ConfigError (one line) when a non-loopback host has no token. */
export function checkExposure(host: string, token: string | null): void {
  if (token === null && !isLoopback(host))
    throw new ConfigError(
      `refusing to serve the dashboard on ${host} without credentials: set JOBVISOR_DASHBOARD_TOKEN or JOBVISOR_DASHBOARD_TOKEN_FILE, or bind 127.0.0.1`,
    );
}

export interface DashboardServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export async function serveDashboard(options: {
  settings: Settings;
  pool: pg.Pool;
  token: string | null;
  host: string;
  port: number;
  log: Logger;
}): Promise<DashboardServer> {
  const { settings, host, token } = options;
  checkExposure(host, token);
  const handler = createDashboard({
    pool: options.pool,
    basePath: settings.dashboard.basePath,
    readOnly: settings.dashboard.readOnly,
    auth: token === null ? false : { token },
    allowedHosts: settings.dashboard.allowedHosts,
    redact: settings.dashboard.redact,
    schedules: settings.schedules,
    schema: settings.database.schema,
    log: options.log,
  });
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
