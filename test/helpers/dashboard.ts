/**
 * A dashboard served for a test: createDashboard mounted in a plain node:http
 * server on a free loopback port, as a user would mount it; and rows seeded
 * with plain SQL (dead letters with an error history) the way a real failing
 * job leaves them.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { createDashboard, type DashboardOptions } from '../../src/dashboard/app.ts';

export const TEST_TOKEN = 'test-dashboard-token-0123456789';

export interface ServedDashboard {
  /** Origin, such as http://127.0.0.1:41234. */
  origin: string;
  /** origin + basePath, ending in "/". */
  url: string;
  close(): Promise<void>;
}

export async function serveTestDashboard(
  options: Omit<DashboardOptions, 'auth'> & { auth?: DashboardOptions['auth'] },
): Promise<ServedDashboard> {
  const handler = createDashboard({ auth: { token: TEST_TOKEN }, ...options });
  const server = createServer((req, res) => handler(req, res, () => res.writeHead(404).end('outside the dashboard')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const base = handler.basePath === '/' ? '/' : `${handler.basePath}/`;
  return {
    origin,
    url: `${origin}${base}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Inserts `count` dead letters of `kind`, each with `attempts` recorded
 * failures (`errors` history, last_error the newest). Returns their ids, lowest first.
 */
export async function seedDeadLetters(
  pool: pg.Pool,
  options: { kind: string; count: number; queue?: string; error?: string; attempts?: number; payload?: unknown },
): Promise<string[]> {
  const attempts = options.attempts ?? 2;
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO jobvisor.jobs (kind, queue, payload, status, attempts, max_attempts, last_error, errors, finished_at, created_at)
     SELECT $1, $2, coalesce($5::jsonb, jsonb_build_object('n', g)), 'failed', $4::int, $4::int,
            format('%s (attempt %s)', $3::text, $4::int),
            (SELECT jsonb_agg(jsonb_build_object('attempt', a, 'at', now() - make_interval(mins => 10 - a),
                                                 'error', format('%s (attempt %s)', $3::text, a)) ORDER BY a)
               FROM generate_series(1, $4::int) a),
            now() - interval '1 minute', now() - interval '15 minutes'
       FROM generate_series(1, $6::int) g
     RETURNING id`,
    [
      options.kind,
      options.queue ?? 'default',
      options.error ?? 'Error: upstream refused',
      attempts,
      options.payload === undefined ? null : JSON.stringify(options.payload),
      options.count,
    ],
  );
  return rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b));
}
