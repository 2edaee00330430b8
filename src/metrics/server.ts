/**
 * The supervisor's HTTP server: GET /metrics, /healthz, /readyz. It answers
 * nothing else, and never shows job payloads.
 *
 * /healthz: the process is alive and its event loop turns (a blocked loop
 *           cannot answer at all, which is what the liveness probe detects).
 * /readyz:  the database answers, the schema is migrated, no loop has failed
 *           for longer than a lease, and the supervisor is not draining; 503
 *           with the reason otherwise.
 * /metrics answers within `scrapeDeadlineMs` whatever the database does: work
 *           before the scrape (database gauges) that takes longer is not waited for.
 */
import { createServer, type Server } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import type { DatabaseAccessError } from '../errors.ts';
import { within } from '../within.ts';

export interface Readiness {
  ready: boolean;
  reason?: string;
  /** Set when the database refuses this process for good (a wrong password, a missing grant): start-up stops. */
  refused?: DatabaseAccessError;
}

export interface HttpOptions {
  host: string;
  port: number;
  /** What /metrics answers: a registry, or anything that renders like one (the cluster's aggregate). */
  registry: Pick<Registry, 'metrics' | 'contentType'>;
  /** Called before each /metrics answer (refreshes database gauges), given the time it may take. */
  beforeScrape?: (deadlineMs: number) => Promise<void>;
  /** Longest wait for beforeScrape (default 2 s). */
  scrapeDeadlineMs?: number;
  readiness: () => Promise<Readiness>;
  /** More fields for /healthz's answer (the cluster primary's hung processes). */
  health?: () => Record<string, unknown>;
}

export async function startHttpServer(
  options: HttpOptions,
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const server = createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (url === '/metrics') {
      void (async () => {
        const deadlineMs = options.scrapeDeadlineMs ?? 2000;
        if (options.beforeScrape)
          await within(
            options.beforeScrape(deadlineMs).catch(() => {}),
            deadlineMs + 100,
          );
        const body = await options.registry.metrics();
        res.writeHead(200, { 'content-type': options.registry.contentType }).end(body);
      })().catch(() => res.writeHead(500).end('metrics failed\n'));
    } else if (url === '/healthz') {
      const body = JSON.stringify({
        status: 'ok',
        eventLoopDelayP99Ms: Math.round(delay.percentile(99) / 1e4) / 100,
        ...options.health?.(),
      });
      delay.reset();
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    } else if (url === '/readyz') {
      void options.readiness().then(
        (r) =>
          res
            .writeHead(r.ready ? 200 : 503, { 'content-type': 'application/json' })
            .end(JSON.stringify(r.ready ? { status: 'ready' } : { status: 'not ready', reason: r.reason })),
        () =>
          res
            .writeHead(503, { 'content-type': 'application/json' })
            .end('{"status":"not ready","reason":"readiness check failed"}'),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics, /healthz or /readyz\n');
    }
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        delay.disable();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
