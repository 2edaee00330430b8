/**
 * Single-row fallbacks for a batch write the database refused.
 *
 * When a batched outcome or reap fails for a reason other than the connection,
 * the batch is split until the one row that fails is alone (see
 * src/supervisor/complete/split_write.ts). That row is then dead-lettered here with the
 * smallest write that can succeed: status, times and last_error, without
 * appending to its `errors` history or computing a retry time, the two parts
 * that a malformed row or an absurd delay broke. Its last_error says what
 * happened, so an operator can fix the row and `jobs retry` it.
 */
import { planned, run, type Now, type Store } from './sql.ts';
import type { Fence } from './types.ts';

const LAST_ERROR_CHARS = 4000;

const DEAD_LETTER_CLAIMED = planned(
  'dead_letter_claimed',
  `
UPDATE jobvisor.jobs AS j
   SET status = 'failed', finished_at = coalesce($5::timestamptz, now()), locked_until = NULL, last_error = $4
 WHERE j.id = $1::bigint AND j.status = 'running' AND j.locked_by = $3 AND j.lease_token = $2::bigint
RETURNING j.id`,
);

/**
 * Dead-letters one claimed job (fenced by owner and token) with `lastError`.
 * @returns false when the fence no longer matches (nothing written).
 * @throws the database error when even this write fails.
 */
export async function deadLetterClaimed(
  store: Store,
  owner: string,
  job: Fence,
  lastError: string,
  now: Now = null,
): Promise<boolean> {
  const rows = await run(store, DEAD_LETTER_CLAIMED, [job.id, job.token, owner, bounded(lastError), now]);
  return rows.length > 0;
}

const DEAD_LETTER_EXPIRED = planned(
  'dead_letter_expired',
  `
UPDATE jobvisor.jobs AS j
   SET status = 'failed', finished_at = coalesce($3::timestamptz, now()), locked_until = NULL,
       last_error = $2 || ' (supervisor ' || coalesce(j.locked_by, '?') || ')'
 WHERE j.id = $1::bigint AND j.status = 'running' AND j.locked_until < coalesce($3::timestamptz, now())
RETURNING j.id, j.queue, j.kind, j.status, j.locked_by`,
);

/**
 * Dead-letters one running job whose lease expired, with `lastError`.
 * @returns the row, or undefined when it is no longer an expired running job.
 */
export async function deadLetterExpired(
  store: Store,
  id: string,
  lastError: string,
  now: Now = null,
): Promise<{ id: string; queue: string; kind: string; status: 'failed'; locked_by: string | null } | undefined> {
  const [row] = await run<{ id: string; queue: string; kind: string; status: 'failed'; locked_by: string | null }>(
    store,
    DEAD_LETTER_EXPIRED,
    [id, bounded(lastError), now],
  );
  return row;
}

/** last_error text: bounded and without NUL (which PostgreSQL text cannot hold). */
function bounded(text: string): string {
  const clean = text.replaceAll('\u0000', '\\0');
  return clean.length > LAST_ERROR_CHARS ? `${clean.slice(0, LAST_ERROR_CHARS)}… (truncated)` : clean;
}
