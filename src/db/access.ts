/**
 * The first connection of a process that forks others (the cluster primary):
 * a database that refuses it for good stops start-up at once, in the parent,
 * instead of in every child after it was forked.
 */
import type pg from 'pg';
import { accessRefused } from '../errors.ts';
import { borrow } from './borrow.ts';

/**
 * Opens one connection of `pool` and gives it back.
 * @throws DatabaseAccessError when the server refuses it for a reason no retry
 *   changes (a wrong password, a missing database); any other failure (the
 *   server away or starting up) is not thrown: the caller's own waits retry it.
 */
export async function checkAccess(pool: pg.Pool): Promise<void> {
  try {
    (await borrow(pool)).release();
  } catch (err) {
    const refused = accessRefused(err);
    if (refused) throw refused;
  }
}
