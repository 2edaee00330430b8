/**
 * The first connection of a process that forks others (the cluster primary):
 * a database that refuses it for good stops start-up at once, in the parent,
 * instead of in every child after it was forked.
 */
import type pg from 'pg';
import { accessRefused } from '../errors.ts';
import { withClient } from './borrow.ts';
import { isMigrated } from './migrate.ts';

/**
 * Opens one connection of `pool` and looks at jobvisor's schema on it, as the
 * readiness probe does.
 * @throws DatabaseAccessError when the server refuses either for a reason no
 *   retry changes (a wrong password, a missing database, no USAGE on the
 *   schema); any other failure (the server away or starting up) is not thrown:
 *   the caller's own waits retry it.
 */
export async function checkAccess(pool: pg.Pool, schema: string): Promise<void> {
  try {
    await withClient(pool, (client) => isMigrated(client, { schema }));
  } catch (err) {
    const refused = accessRefused(err);
    if (refused) throw refused;
  }
}
