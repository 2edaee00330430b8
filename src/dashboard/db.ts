/**
 * How the dashboard reaches the database: each request borrows one client of
 * the pool it was given and bounds every statement on it with the dashboard's
 * own statement_timeout (default 5 s), restoring the client's previous value
 * before handing it back. A pool the dashboard shares with an application
 * therefore keeps its own setting, and no page can hold a connection for
 * longer than the bound, whatever the size of the table.
 */
import type pg from 'pg';
import { withClient } from '../db/borrow.ts';
import { setStatementTimeout, setStatementTimeoutSql, timeoutText } from '../db/statement_timeout.ts';
import type { Store } from '../queue/sql.ts';

export const DASHBOARD_STATEMENT_TIMEOUT_MS = 5_000;

export interface DashboardDb {
  /** Runs `fn` on one client with the statement bound applied. */
  use<T>(fn: (store: Store) => Promise<T>): Promise<T>;
}

export function dashboardDb(pool: pg.Pool, schema: string, timeoutMs = DASHBOARD_STATEMENT_TIMEOUT_MS): DashboardDb {
  return {
    use(fn) {
      return withClient(pool, async (client, discard) => {
        const { rows } = await client.query<{ before: string }>(
          `SELECT current_setting('statement_timeout') AS before, ${setStatementTimeoutSql(1)}`,
          [timeoutText(timeoutMs)],
        );
        try {
          return await fn({ db: serialized(client), schema });
        } finally {
          // A client whose setting could not be restored is closed, not pooled again.
          await setStatementTimeout(client, rows[0]?.before ?? '0').catch((err: Error) => discard(err));
        }
      });
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
