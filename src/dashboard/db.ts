/**
 * How the dashboard reaches the database: each request borrows one client of
 * the pool it was given, and every statement on it runs under the dashboard's
 * own statement_timeout (default 5 s), set for the statement's transaction
 * only (`SET LOCAL`, queue/sql.ts `Store.statementTimeoutMs`). No page can hold
 * a connection for longer than the bound, whatever the size of the table, and
 * nothing the dashboard sets stays on the connection: a pool shared with an
 * application keeps its own settings, through a pooler in transaction mode too.
 */
import type pg from 'pg';
import { withClient } from '../db/borrow.ts';
import type { Store } from '../queue/sql.ts';

export const DASHBOARD_STATEMENT_TIMEOUT_MS = 5_000;

export interface DashboardDb {
  /** Runs `fn` on one client with the statement bound applied. */
  use<T>(fn: (store: Store) => Promise<T>): Promise<T>;
}

export function dashboardDb(pool: pg.Pool, schema: string, timeoutMs = DASHBOARD_STATEMENT_TIMEOUT_MS): DashboardDb {
  return {
    use(fn) {
      return withClient(pool, (client) => fn({ db: serialized(client), schema, statementTimeoutMs: timeoutMs }));
    },
  };
}

/**
 * The client as the admin functions see it: statements they issue together
 * (Promise.all) wait here, in order, instead of on pg's internal queue, which
 * pg 8 deprecates ("client is already executing a query").
 */
function serialized(client: pg.PoolClient): pg.PoolClient {
  let tail: Promise<unknown> = Promise.resolve();
  const view = Object.create(client) as pg.PoolClient;
  const query = (...args: unknown[]): Promise<unknown> => {
    const next = tail.then(() => (client.query as (...a: unknown[]) => Promise<unknown>).apply(client, args));
    tail = next.catch(() => undefined);
    return next;
  };
  view.query = query as pg.PoolClient['query'];
  return view;
}
