/**
 * One exchange with the database's clock alone, for a supervisor whose claims
 * measured it too roughly to place rate-limited starts (a loaded machine: the
 * claim's round trip waits for the queue's lock and a pooled connection).
 * The same NTP reading as a claim's (claim_limited_rows.ts, ClockSample), on a
 * statement that touches no table and takes no lock, so its round trip is as
 * short as the connection allows. Sent only when the error bound is too large
 * (supervisor/claim/clock_gate.ts), a few times at most, never on the claim's
 * hot path; no plan to check.
 */
import type { ClockSample } from './claim_limited_rows.ts';
import type { Db } from './sql.ts';

const READ_DB_CLOCK = `/* jobvisor_read_db_clock */
SELECT extract(epoch FROM statement_timestamp()) * 1000 AS db_received_ms,
       extract(epoch FROM clock_timestamp()) * 1000 AS db_replied_ms`;

/**
 * Reads the database's clock against the local one (`clock`, ms since the
 * epoch) around one round trip. Throws what the connection throws.
 */
export async function readDbClock(db: Db, clock: () => number = Date.now): Promise<ClockSample> {
  const sentMs = clock();
  const { rows } = await db.query<{ db_received_ms: string; db_replied_ms: string }>(READ_DB_CLOCK);
  const receivedMs = clock();
  const row = rows[0];
  return {
    sentMs,
    dbReceivedMs: Number(row?.db_received_ms),
    dbRepliedMs: Number(row?.db_replied_ms),
    receivedMs,
  };
}
