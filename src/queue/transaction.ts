/**
 * One transaction on one connection, for writes that must land together (the
 * outcomes of one batch call: supervisor/complete/call_batch.ts). The
 * statements inside are the ordinary ones, each run on the transaction's
 * connection; a failure rolls everything back and is rethrown.
 */
import { withConnection } from '../db/borrow.ts';
import type { Store } from './sql.ts';

/**
 * Runs `fn` inside BEGIN … COMMIT on one connection of `store` (a pool's
 * client, borrowed for it); ROLLBACK and rethrows when `fn` or the COMMIT fails.
 */
export async function inTransaction<T>(store: Store, fn: (tx: Store) => Promise<T>): Promise<T> {
  return withConnection(store.db, async (client) => {
    await client.query('BEGIN');
    try {
      const result = await fn({ db: client, schema: store.schema });
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  });
}
