/**
 * Settings that last as long as one statement's transaction, never longer.
 *
 * A statement that must run under settings of its own (planner switches, a
 * statement_timeout) gets them with `SET LOCAL`, which the server forgets at
 * COMMIT or ROLLBACK. A session-level SET would stay on the server connection
 * that ran it: behind a pooler in transaction mode, the next transaction there
 * is anyone's, an application's included, and runs under jobvisor's settings.
 *
 *   - On a pool, or a client outside a transaction: the statement runs in a
 *     transaction of its own that opens with the settings (`BEGIN; SET LOCAL
 *     …` in one round trip, then the statement, then COMMIT).
 *   - Inside the caller's transaction (an app's client, or a client that
 *     cannot say): the settings are set for that transaction (`set_config(…,
 *     true)`) and put back as they were after the statement, so the caller's
 *     next statements run as before; its commit or rollback ends them anyway.
 *
 * Several statements on one client (an admin function's Promise.all on a
 * dashboard request's client) take turns: each one's steps run together.
 */
import type pg from 'pg';
import { isPool, withClient } from './borrow.ts';
import type { Db } from './pool.ts';

type Connection = pg.PoolClient | pg.Client;

/** `SET LOCAL name = value; …`, from constants of the caller's: names and values are words. */
const PAIR = /SET LOCAL (\w+) = (\w+)/g;

/** The tail of the statements in progress on each client, so that they take turns. */
const turns = new WeakMap<object, Promise<unknown>>();

/**
 * Runs `statement` (one statement on the connection it is given) under
 * `settings` (`SET LOCAL name = value; …`); see the file comment.
 */
export function runScoped<T>(db: Db, settings: string, statement: (db: Connection) => Promise<T>): Promise<T> {
  if (isPool(db)) return withClient(db, (client) => inOwnTransaction(client, settings, statement));
  const client = db;
  const previous = turns.get(client) ?? Promise.resolve();
  const mine = previous.then(() =>
    transactionStatus(client) === 'I'
      ? inOwnTransaction(client, settings, statement)
      : inCallersTransaction(client, settings, statement),
  );
  turns.set(
    client,
    mine.catch(() => undefined),
  );
  return mine;
}

/** 'I' (idle), 'T' (in a transaction), 'E' (in a failed one); null when the client cannot say. */
function transactionStatus(client: Connection): string | null {
  const status = (client as { getTransactionStatus?: () => string | null }).getTransactionStatus;
  return typeof status === 'function' ? (status.call(client) ?? null) : null;
}

async function inOwnTransaction<T>(
  client: Connection,
  settings: string,
  statement: (db: Connection) => Promise<T>,
): Promise<T> {
  try {
    await client.query(`BEGIN; ${settings}`);
    const result = await statement(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

async function inCallersTransaction<T>(
  client: Connection,
  settings: string,
  statement: (db: Connection) => Promise<T>,
): Promise<T> {
  const pairs = [...settings.matchAll(PAIR)].map((m) => [m[1] as string, m[2] as string]);
  const read = `SELECT ARRAY[${pairs.map(([n]) => `current_setting('${n}')`).join(', ')}] AS before`;
  const write = `SELECT ${pairs.map(([n], i) => `set_config('${n}', $${i + 1}, true)`).join(', ')}`;
  // Config objects: a client may be a view that takes nothing else (db/held.ts).
  const { rows } = await client.query<{ before: string[] }>({ text: read });
  const before = rows[0]?.before ?? [];
  await client.query({ text: write, values: pairs.map(([, v]) => v) });
  try {
    return await statement(client);
  } finally {
    await client.query({ text: write, values: before }).catch(() => {});
  }
}
