/**
 * The claim statements of a limited queue (globalConcurrency, perKeyConcurrency
 * or rateLimit): one statement each, one round trip. A function of migration
 * 031 chooses the jobs, jobvisor.queue_offers() for queue-wide limits and
 * jobvisor.key_offers() for per-key ones: it takes the queue's advisory lock,
 * counts what the limits count with a snapshot taken after it (so two
 * supervisors can never both take the last free slot), and returns the ids to
 * claim in claim order, with one row (o_id NULL) of what the claim needs
 * besides. The per-key statement here claims them; the queue-wide claim is a
 * function as a whole (migration 032). The choice is made in PL/pgSQL because
 * its plans are kept per connection, where this statement's own plan is made
 * on every claim (sql.ts says why): planning the whole per-key choice cost
 * more than running it (migration 031 has the figures).
 *
 * Held slots are counted from the jobs table itself (running rows), never from
 * a counter a crash could leak: a killed supervisor's rows hold their slots
 * until the reaper returns them, then the slots are free. A running job that
 * was cancelled keeps its lease (admin cancel leaves locked_until), and holds
 * its slot while that lease lasts: its supervisor renews it until the run has
 * ended and then clears it (cancelled_slot.ts), so the task still stopping
 * never overlaps the next job of its key. The supervisor's own runs that have
 * ended, outcome not yet written (`ended`, passed until a claim spends their
 * slots), free their slots for this claim (migration 031 says why that is safe).
 *
 * The per-key statement's parameters (the function's are listed at
 * CLAIM_QUEUE_LIMITED): $1 owner, $2 queue, $3 lease ms, $4 free local places,
 * $5 pinned now (tests; null: the database clock after the lock), $6 largest
 * payload sent, $7 globalConcurrency, $8 perKeyConcurrency, $9 rate count,
 * $10 rate window ms (period + guard), $11 rate per key, $12 how far ahead the
 * claimed jobs are scheduled to start (ms; 0 without a rate limit), $13 how far
 * ahead a queue-wide rate limit hands out start slots, $14 and $15 the queue's
 * advisory lock, $16 and $17 the ended runs (ids, claim tokens), $18 commit
 * durably (synchronous standbys; else synchronous_commit is off for the claim,
 * as for the plain claim: claim.ts says why).
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
import { PAYLOAD_COLUMNS, PAYLOAD_TEXT } from './claim.ts';
import { planned } from './sql.ts';

/**
 * Queue-wide limits only (globalConcurrency and/or a queue-wide rate limit):
 * the plain claim's candidates, as many as the limits leave
 * (jobvisor.queue_offers()), claimed by jobvisor.claim_queue_limited() of
 * migration 032, whose plan is kept (that migration says why and has the
 * figures). A rate limit's k-th job starts at the first free slot + (k - 1) ×
 * window/count. Its own parameters, in this order: $1 owner, $2 queue, $3
 * lease ms, $4 free local places, $5 pinned now, $6 largest payload sent, $7
 * the largest payload carried inline (INLINE_PAYLOAD_BYTES), $8
 * globalConcurrency, $9 rate count, $10 rate window ms, $11 start delay ms,
 * $12 pacing horizon ms, $13 and $14 the queue's lock, $15 and $16 the ended
 * runs, $17 durable. The rows are the per-key statement's columns, and
 * next_free_ms.
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
 * with pending jobs, round robin by weight). Extra parameters: $19 the key
 * after which to start (null: the first), $20 how many keys to visit at most,
 * $21 how many of the queue's first due jobs (any key, claim order) to look
 * among for jobs without a key (null: all of them), $22 and $23 keys with a
 * weight of their own and their weights, $24 every other key's weight.
 *
 * `m` is the meta row of the chosen ids: the clock after the lock, and when
 * the claimed jobs start ($13 is named so that every parameter has a type).
 * The commit is asynchronous unless $18 (claim.ts says why). The claimed rows
 * are found by primary key. The status test is written so that
 * jobs_pending_idx cannot serve it: with `j.status = 'pending'` the planner,
 * which cannot see how many ids the array holds, sometimes read the whole
 * pending index instead (231 pages for one job behind 20,000 pending ones,
 * under the queue's lock). Rate limits record a row per start per key, or the
 * queue's last start.
 */
export const CLAIM_KEY_LIMITED = planned(
  'claim_key_limited',
  `
WITH o AS MATERIALIZED (
  SELECT * FROM jobvisor.key_offers($14::int, $15::int, $2, $5::timestamptz, $4::int, $7::int, $8::int, $9::int,
                                    $10::float8, $11::bool, $12::float8, $1, $16::bigint[], $17::bigint[],
                                    $19::text, $20::int, $21::int, $22::text[], $23::float8[], $24::float8)
),
m AS (
  SELECT x.o_budget AS n, x.o_now AS now, x.o_now + $12::float8 * interval '1 millisecond' AS at,
         x.o_ended_tokens, x.o_ended_keys, x.o_keys_visited, x.o_last_key, x.o_keyless_hidden,
         $13::float8 AS horizon
    FROM o AS x,
         (SELECT set_config('synchronous_commit',
                            CASE WHEN $18::bool THEN current_setting('synchronous_commit') ELSE 'off' END, true)) AS sc
   WHERE x.o_id IS NULL
),
claimed AS (
  UPDATE jobvisor.jobs AS j
     SET status = 'running',
         attempts = least(j.attempts, 2147483646) + 1,
         lease_token = nextval('jobvisor.lease_token_seq'),
         locked_by = $1,
         locked_until = m.now + $3::float8 * interval '1 millisecond',
         started_at = m.at
    FROM m
   WHERE j.id = ANY (ARRAY(SELECT x.o_id FROM o AS x WHERE x.o_id IS NOT NULL)) AND coalesce(j.status, '') = 'pending'
  RETURNING j.id, j.kind, j.queue, ${PAYLOAD_TEXT}, j.attempts, j.max_attempts, j.priority, j.run_at, j.lease_token,
            j.trace_context, j.concurrency_key, j.started_at, j.has_steps
),
recorded AS (
  INSERT INTO jobvisor.rate_starts (queue, key, started_at)
  SELECT $2, c.concurrency_key, c.started_at
    FROM claimed AS c
   WHERE $9::int IS NOT NULL AND $11::bool AND c.concurrency_key IS NOT NULL
  UNION ALL
  SELECT $2, '', max(c.started_at) FROM claimed AS c WHERE $9::int IS NOT NULL AND NOT $11::bool HAVING count(*) > 0
),
pruned AS (
  DELETE FROM jobvisor.rate_starts AS r USING m
   WHERE $9::int IS NOT NULL AND r.queue = $2 AND r.started_at <= m.at - $10::float8 * interval '1 millisecond'
)
SELECT m.n AS budget, extract(epoch FROM statement_timestamp()) * 1000 AS db_received_ms,
       extract(epoch FROM clock_timestamp()) * 1000 AS db_replied_ms,
       c.id, c.kind, c.queue, c.lease_token::text AS token, ${PAYLOAD_COLUMNS}, c.attempts, c.max_attempts,
       extract(epoch FROM c.run_at) * 1000 AS run_at_ms, c.trace_context::text AS trace_context,
       extract(epoch FROM c.started_at) * 1000 AS start_at_ms, c.concurrency_key AS key, c.has_steps,
       CASE WHEN row_number() OVER () = 1 THEN m.o_ended_tokens::text[] END AS ended_tokens,
       CASE WHEN row_number() OVER () = 1 THEN m.o_ended_keys END AS ended_keys,
       NULL::float8 AS next_free_ms, x.o_i AS key_index, m.o_last_key AS last_key,
       m.o_keys_visited AS keys_visited, m.o_keyless_hidden AS keyless_hidden
  FROM m LEFT JOIN claimed AS c ON true LEFT JOIN o AS x ON x.o_id = c.id
 ORDER BY c.started_at, x.o_seq`,
);
