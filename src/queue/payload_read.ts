/**
 * A deferred payload (queue/claim.ts INLINE_PAYLOAD_BYTES): read by the worker
 * thread that runs the job, just before its task starts, so its text is built,
 * sent and decoded once, in that thread, and never on the supervisor's main
 * thread, whose turns renew the leases.
 *
 * Fenced by the claim's token: a run whose lease was lost (reaped, cancelled,
 * re-queued) reads nothing, as its writes would change nothing. The same size
 * rules as a claim's: a payload stored in more than 8 × the limit is not
 * converted at all, and text over the limit is not sent, only measured.
 * One row by primary key; sent unnamed like every statement (see sql.ts).
 *
 * The text is built once, in the inner SELECT: `OFFSET 0` keeps the planner
 * from folding it into the outer one, which would convert the payload (and
 * decompress it) once for each of the four references to `p.text`. For a
 * 900 KB payload that was 80 ms of the server's CPU per read instead of 19.
 */
import { planned, run, type Db } from './sql.ts';

const READ_PAYLOAD = planned(
  'read_payload',
  `
SELECT CASE WHEN octet_length(p.text) <= $3 THEN p.text END AS text,
       CASE WHEN octet_length(p.text) > $3 THEN octet_length(p.text) END AS bytes,
       CASE WHEN p.text IS NULL THEN p.stored END AS stored
  FROM (SELECT CASE WHEN pg_column_size(payload) <= $3::bigint * 8 THEN payload::text END AS text,
               pg_column_size(payload) AS stored
          FROM jobvisor.jobs
         WHERE id = $1::bigint AND lease_token = $2::bigint AND status = 'running'
        OFFSET 0) AS p`,
);

/** What a run's payload read found. */
export type ClaimedPayload =
  | { type: 'text'; text: string }
  /** Over the limit: the JSON text's size, or (text not built) the stored size. */
  | { type: 'oversized'; payloadBytes: number | null; payloadStoredBytes: number | null }
  /** The claim is no longer this run's (lease lost, job cancelled or re-queued). */
  | { type: 'gone' };

/** The payload of the job `id` while claim `token` holds it. */
export async function readClaimedPayload(
  db: Db,
  schema: string,
  fence: { id: string; token: string },
  maxPayloadBytes: number,
): Promise<ClaimedPayload> {
  const [row] = await run<{ text: string | null; bytes: number | null; stored: number | null }>(
    { db, schema },
    READ_PAYLOAD,
    [fence.id, fence.token, maxPayloadBytes],
  );
  if (!row) return { type: 'gone' };
  if (row.text !== null) return { type: 'text', text: row.text };
  return { type: 'oversized', payloadBytes: row.bytes, payloadStoredBytes: row.stored };
}
