-- A limited queue's claim, whole, in functions whose plans are kept: first the
-- queue-wide claim, then the per-key one (at the end of this file).
--
-- Migration 031 moved the choice of a limited queue's jobs into PL/pgSQL and
-- left the UPDATE that claims them in the statement the supervisor sends
-- (src/queue/claim_limited_sql.ts). That statement is unnamed, so PostgreSQL
-- plans it on every claim (src/queue/sql.ts says why): with
-- pg_stat_statements.track_planning, a claim of about 49 jobs under
-- globalConcurrency took 2.2 ms to run and 0.5 ms to plan, where the plain
-- claim of 50 took 1.5 and 0.25. A queue-wide limited queue claims nothing
-- ahead, so its thread waits through every claim, and sending the statement
-- named (its plan kept per connection) made such a queue 13-14 % faster. A
-- named statement is not safe behind a pooler in transaction mode; a function
-- is: its plans are kept per connection, whichever connection runs it.
--
-- The statement below is the one the supervisor sent until now, unchanged but
-- for the per-key branches (this claim is queue-wide only: per-key rate limits
-- go through the per-key claim) and the inline payload limit, now a parameter
-- ($7, INLINE_PAYLOAD_BYTES in src/queue/claim.ts). The planning settings are
-- 031's, for the same reason: a plan made while the table was tiny must stay
-- an index walk when the table has grown, and a generic plan needs no value of
-- a call, since the settings leave it only index walks (the jobs are found by
-- primary key, the rate starts by (queue, started_at)).
--
-- The rows come back in the order of the final ORDER BY: RETURN QUERY appends
-- them to the function's result in that order, and a scan of a function's
-- result reads it in order.
CREATE FUNCTION jobvisor.claim_queue_limited(
  owner text, q text, lease_ms float8, places integer, at timestamptz, max_payload bigint, inline_bytes integer,
  global_limit integer, rate_count integer, rate_window_ms float8, start_delay_ms float8, horizon_ms float8,
  lock_space integer, lock_key integer, ended_run_ids bigint[], ended_run_tokens bigint[], durable boolean)
RETURNS TABLE (budget integer, db_received_ms numeric, db_replied_ms numeric, id bigint, kind text, queue text,
               token text, payload text, payload_bytes integer, payload_stored integer, payload_deferred boolean,
               attempts integer, max_attempts integer, run_at_ms numeric, trace_context text, start_at_ms numeric,
               key text, has_steps boolean, ended_tokens text[], ended_keys text[], next_free_ms float8)
LANGUAGE plpgsql VOLATILE ROWS 50 SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off
  SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH o AS MATERIALIZED (
    SELECT * FROM jobvisor.queue_offers($13, $14, $2, $5, $4, $8, $9, $10, $11, $12, $1, $15, $16)
  ),
  m AS (
    SELECT x.o_budget AS n, x.o_now AS now, x.o_now + $11 * interval '1 millisecond' AS at,
           x.o_ended_tokens, x.o_ended_keys, x.o_next_free_ms AS next_free_ms, x.o_first_slot AS first_slot
      FROM o AS x,
           (SELECT set_config('synchronous_commit',
                              CASE WHEN $17 THEN current_setting('synchronous_commit') ELSE 'off' END, true)) AS sc
     WHERE x.o_id IS NULL
  ),
  claimed AS (
    UPDATE jobvisor.jobs AS j
       SET status = 'running',
           attempts = least(j.attempts, 2147483646) + 1,
           lease_token = nextval('jobvisor.lease_token_seq'),
           locked_by = $1,
           locked_until = m.now + $3 * interval '1 millisecond',
           started_at = coalesce(m.first_slot + ((SELECT x.o_seq FROM o AS x WHERE x.o_id = j.id) - 1)
                                 * ($10 / $9) * interval '1 millisecond', m.at)
      FROM m
     WHERE j.id = ANY (ARRAY(SELECT x.o_id FROM o AS x WHERE x.o_id IS NOT NULL)) AND coalesce(j.status, '') = 'pending'
    RETURNING j.id AS c_id, j.kind AS c_kind, j.queue AS c_queue,
              CASE WHEN pg_column_size(j.payload) <= least($6 * 8, $7) THEN j.payload::text END AS c_text,
              pg_column_size(j.payload) AS c_stored, j.attempts AS c_attempts, j.max_attempts AS c_max_attempts,
              j.priority AS c_priority, j.run_at AS c_run_at, j.lease_token AS c_token,
              j.trace_context AS c_trace_context, j.concurrency_key AS c_key, j.started_at AS c_started_at,
              j.has_steps AS c_has_steps
  ),
  recorded AS (
    INSERT INTO jobvisor.rate_starts (queue, key, started_at)
    SELECT $2, '', max(c.c_started_at) FROM claimed AS c WHERE $9 IS NOT NULL HAVING count(*) > 0
  ),
  pruned AS (
    DELETE FROM jobvisor.rate_starts AS r USING m
     WHERE $9 IS NOT NULL AND r.queue = $2 AND r.started_at <= m.at - $10 * interval '1 millisecond'
  )
  SELECT m.n, extract(epoch FROM statement_timestamp()) * 1000, extract(epoch FROM clock_timestamp()) * 1000,
         c.c_id, c.c_kind, c.c_queue, c.c_token::text, CASE WHEN octet_length(c.c_text) <= $6 THEN c.c_text END,
         CASE WHEN octet_length(c.c_text) > $6 THEN octet_length(c.c_text) END,
         CASE WHEN c.c_text IS NULL AND c.c_stored > $6 * 8 THEN c.c_stored END,
         c.c_text IS NULL AND c.c_stored <= $6 * 8, c.c_attempts, c.c_max_attempts,
         extract(epoch FROM c.c_run_at) * 1000, c.c_trace_context::text, extract(epoch FROM c.c_started_at) * 1000,
         c.c_key, c.c_has_steps,
         CASE WHEN row_number() OVER () = 1 THEN m.o_ended_tokens::text[] END,
         CASE WHEN row_number() OVER () = 1 THEN m.o_ended_keys END, m.next_free_ms
    FROM m LEFT JOIN claimed AS c ON true
   ORDER BY c.c_started_at, c.c_priority, c.c_run_at, c.c_id;
END
$$;

-- The per-key claim, whole, for the same reason: it claims ahead (about 100 ms
-- of work, src/supervisor/claim/ahead.ts), but a queue with few keys has few
-- slots to claim ahead into, and its claims stay small (about 54 jobs for 100
-- keys at perKeyConcurrency 1), where planning the statement cost 0.58 ms of
-- each 6.1-ms claim. The statement is the one the supervisor sent until now:
-- jobvisor.key_offers() chooses (031 says how), this claims the chosen ids by
-- primary key, all starting at the first start slot, and records rate-limit
-- starts, one row per start per key, or the queue's last start when the rate
-- limit is queue-wide.
CREATE FUNCTION jobvisor.claim_key_limited(
  owner text, q text, lease_ms float8, places integer, at timestamptz, max_payload bigint, inline_bytes integer,
  global_limit integer, key_limit integer, rate_count integer, rate_window_ms float8, rate_per_key boolean,
  start_delay_ms float8, lock_space integer, lock_key integer, ended_run_ids bigint[], ended_run_tokens bigint[],
  durable boolean, after_key text, max_keys integer, keyless_window integer, weight_keys text[], weights float8[],
  other_weight float8)
RETURNS TABLE (budget integer, db_received_ms numeric, db_replied_ms numeric, id bigint, kind text, queue text,
               token text, payload text, payload_bytes integer, payload_stored integer, payload_deferred boolean,
               attempts integer, max_attempts integer, run_at_ms numeric, trace_context text, start_at_ms numeric,
               key text, has_steps boolean, ended_tokens text[], ended_keys text[], next_free_ms float8,
               key_index integer, last_key text, keys_visited integer, keyless_hidden boolean)
LANGUAGE plpgsql VOLATILE ROWS 100 SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off
  SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH o AS MATERIALIZED (
    SELECT * FROM jobvisor.key_offers($14, $15, $2, $5, $4, $8, $9, $10, $11, $12, $13, $1, $16, $17,
                                      $19, $20, $21, $22, $23, $24)
  ),
  m AS (
    SELECT x.o_budget AS n, x.o_now AS now, x.o_now + $13 * interval '1 millisecond' AS at,
           x.o_ended_tokens, x.o_ended_keys, x.o_keys_visited, x.o_last_key, x.o_keyless_hidden
      FROM o AS x,
           (SELECT set_config('synchronous_commit',
                              CASE WHEN $18 THEN current_setting('synchronous_commit') ELSE 'off' END, true)) AS sc
     WHERE x.o_id IS NULL
  ),
  claimed AS (
    UPDATE jobvisor.jobs AS j
       SET status = 'running',
           attempts = least(j.attempts, 2147483646) + 1,
           lease_token = nextval('jobvisor.lease_token_seq'),
           locked_by = $1,
           locked_until = m.now + $3 * interval '1 millisecond',
           started_at = m.at
      FROM m
     WHERE j.id = ANY (ARRAY(SELECT x.o_id FROM o AS x WHERE x.o_id IS NOT NULL)) AND coalesce(j.status, '') = 'pending'
    RETURNING j.id AS c_id, j.kind AS c_kind, j.queue AS c_queue,
              CASE WHEN pg_column_size(j.payload) <= least($6 * 8, $7) THEN j.payload::text END AS c_text,
              pg_column_size(j.payload) AS c_stored, j.attempts AS c_attempts, j.max_attempts AS c_max_attempts,
              j.priority AS c_priority, j.run_at AS c_run_at, j.lease_token AS c_token,
              j.trace_context AS c_trace_context, j.concurrency_key AS c_key, j.started_at AS c_started_at,
              j.has_steps AS c_has_steps
  ),
  recorded AS (
    INSERT INTO jobvisor.rate_starts (queue, key, started_at)
    SELECT $2, c.c_key, c.c_started_at
      FROM claimed AS c
     WHERE $10 IS NOT NULL AND $12 AND c.c_key IS NOT NULL
    UNION ALL
    SELECT $2, '', max(c.c_started_at) FROM claimed AS c WHERE $10 IS NOT NULL AND NOT $12 HAVING count(*) > 0
  ),
  pruned AS (
    DELETE FROM jobvisor.rate_starts AS r USING m
     WHERE $10 IS NOT NULL AND r.queue = $2 AND r.started_at <= m.at - $11 * interval '1 millisecond'
  )
  SELECT m.n, extract(epoch FROM statement_timestamp()) * 1000, extract(epoch FROM clock_timestamp()) * 1000,
         c.c_id, c.c_kind, c.c_queue, c.c_token::text, CASE WHEN octet_length(c.c_text) <= $6 THEN c.c_text END,
         CASE WHEN octet_length(c.c_text) > $6 THEN octet_length(c.c_text) END,
         CASE WHEN c.c_text IS NULL AND c.c_stored > $6 * 8 THEN c.c_stored END,
         c.c_text IS NULL AND c.c_stored <= $6 * 8, c.c_attempts, c.c_max_attempts,
         extract(epoch FROM c.c_run_at) * 1000, c.c_trace_context::text, extract(epoch FROM c.c_started_at) * 1000,
         c.c_key, c.c_has_steps,
         CASE WHEN row_number() OVER () = 1 THEN m.o_ended_tokens::text[] END,
         CASE WHEN row_number() OVER () = 1 THEN m.o_ended_keys END, NULL::float8,
         x.o_i, m.o_last_key, m.o_keys_visited, m.o_keyless_hidden
    FROM m LEFT JOIN claimed AS c ON true LEFT JOIN o AS x ON x.o_id = c.c_id
   ORDER BY c.c_started_at, x.o_seq;
END
$$;
