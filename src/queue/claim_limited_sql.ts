/**
 * The claim statements of a limited queue (globalConcurrency, perKeyConcurrency
 * or rateLimit): one statement each, one round trip, and each a call of a
 * PL/pgSQL function that claims (jobvisor.claim_queue_limited() of migration
 * 033, jobvisor.claim_key_limited() of 032). Each takes the queue's advisory
 * lock (a per-key claim: shared, with the locks of the keys it serves;
 * migration 035), counts what the limits count with a snapshot taken after it
 * (so two supervisors can never both take the last free slot), chooses the jobs to
 * claim in claim order and takes them by primary key. The queue-wide claim
 * does all of that in its own body; the per-key one has
 * jobvisor.key_offers() (migration 031) choose them, which returns the ids
 * with one row (o_id NULL) of what the claim needs besides. A key with room
 * for one job is offered the first entry its walk read before the locks
 * (migration 036), so the per-key claim takes a job only while it is still
 * pending and due. Both are in PL/pgSQL because its plans are kept per
 * connection, where a statement sent unnamed is planned on every claim
 * (sql.ts says why): planning the per-key choice cost more than running it
 * (migration 031 has the figures), and planning the claim around it a tenth
 * to a fifth of each claim (migration 032).
 *
 * Held slots are counted from the jobs table itself (running rows), never from
 * a counter a crash could leak: a killed supervisor's rows hold their slots
 * until the reaper returns them, then the slots are free. A running job that
 * was cancelled keeps its lease (admin cancel leaves locked_until), and holds
 * its slot while that lease lasts: its supervisor renews it until the run has
 * ended and then clears it (cancelled_slot.ts), so the task still stopping
 * never overlaps the next job of its key. The supervisor's own runs that have
 * ended, outcome not yet written (`ended`: supervisor/claim/transfers.ts says
 * which are passed), free their slots for this claim (migration 031 says why
 * that is safe); they are read by their ids through an index (migration 037).
 *
 * The parameters (listed at each statement) include the queue's advisory
 * lock, the ended runs (ids, claim tokens), and whether to commit durably
 * (synchronous standbys; else synchronous_commit is off for the claim, as for
 * the plain claim: claim.ts says why). $5, the pinned now, is for tests (null:
 * the database clock after the lock); $7 is the largest payload a claim
 * carries inline (INLINE_PAYLOAD_BYTES).
 *
 * Rate limits record starts in jobvisor.rate_starts, at the moment each job is
 * scheduled to start; the supervisor starts it then (claim_limited.ts says
 * why). A queue-wide limit paces: the k-th job of a claim starts at the next
 * free slot + k × window/count, so any window of the period holds at most
 * `count` starts however they fall. Pacing needs only the last slot handed
 * out, so such a claim records one row, its last slot, not one per job. A
 * per-key limit counts each key's starts within the window before it (a row
 * per start), since keys are many and each has few starts.
 *
 * Every result has one row even when nothing is claimed: `budget` (what the
 * cluster limits allowed), `next_free_ms` (when half the pacing horizon is
 * free again), and the database's clock when the statement arrived
 * (statement_timestamp()) and when each row left (clock_timestamp()), which
 * the supervisor measures its own clock against (db_clock.ts), ride along; one
 * row carries the ended runs found (`ended_tokens`, `ended_keys`).
 */
import { planned } from './sql.ts';

/**
 * Queue-wide limits only (globalConcurrency and/or a queue-wide rate limit):
 * the plain claim's candidates, as many as the limits leave, claimed by
 * jobvisor.claim_queue_limited() of migration 033, whose plans are kept
 * (migrations 032 and 033 say why and have the figures). A rate limit's k-th
 * job starts at the first free slot + (k - 1) × window/count. Its own
 * parameters, in this order: $1 owner, $2 queue, $3 lease ms, $4 free local
 * places, $5 pinned now, $6 largest payload sent, $7 the largest payload
 * carried inline (INLINE_PAYLOAD_BYTES), $8 globalConcurrency, $9 rate
 * count, $10 rate window ms, $11 start delay ms, $12 pacing horizon ms, $13
 * and $14 the queue's lock, $15 and $16 the ended runs, $17 durable. Each
 * row: budget, db_received_ms and db_replied_ms, a claimed job's columns (id
 * to has_steps; none when nothing was claimed), ended_tokens and ended_keys on
 * the first row, next_free_ms.
 */
export const CLAIM_QUEUE_LIMITED = planned(
  'claim_queue_limited',
  `
SELECT * FROM jobvisor.claim_queue_limited($1::text, $2::text, $3::float8, $4::int, $5::timestamptz, $6::bigint,
                                           $7::int, $8::int, $9::int, $10::float8, $11::float8, $12::float8,
                                           $13::int, $14::int, $15::bigint[], $16::bigint[], $17::bool)`,
);

/**
 * Per-key limits (perKeyConcurrency and/or rateLimit.perKey): the jobs
 * jobvisor.key_offers() chooses (its comment says how: a walk of the keys
 * with pending jobs, round robin by weight), claimed by
 * jobvisor.claim_key_limited() of migration 032, all starting at the first
 * start slot. Its parameters: $1–$8 as CLAIM_QUEUE_LIMITED's, then $9
 * perKeyConcurrency, $10 rate count, $11 rate window ms, $12 whether the rate
 * limit is per key, $13 start delay ms, $14 and $15 the queue's lock, $16 and
 * $17 the ended runs, $18 durable, $19 the key after which to start (null:
 * the first), $20 how many keys to visit at most, $21 how many of the queue's
 * first due jobs (any key, claim order) to look among for jobs without a key
 * (null: all of them), $22 and $23 keys with a weight of their own and their
 * weights, $24 every other key's weight. Its rows have CLAIM_QUEUE_LIMITED's
 * columns (next_free_ms null), then key_index, last_key, keys_visited and
 * keyless_hidden.
 */
export const CLAIM_KEY_LIMITED = planned(
  'claim_key_limited',
  `
SELECT * FROM jobvisor.claim_key_limited($1::text, $2::text, $3::float8, $4::int, $5::timestamptz, $6::bigint,
                                         $7::int, $8::int, $9::int, $10::int, $11::float8, $12::bool, $13::float8,
                                         $14::int, $15::int, $16::bigint[], $17::bigint[], $18::bool, $19::text,
                                         $20::int, $21::int, $22::text[], $23::float8[], $24::float8)`,
);
