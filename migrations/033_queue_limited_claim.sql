-- The queue-wide limited claim (globalConcurrency and/or a queue-wide rate
-- limit) in one function instead of three.
--
-- Migration 032's claim_queue_limited() called queue_offers(), which called
-- limit_state(): three PL/pgSQL calls, each with its own planning settings to
-- set and restore, and five statements per claim: the lock, the count of held
-- slots, the choice of the candidates (which read the claimed rows a second
-- time, by id, only to number them in claim order), the claim, and the
-- function scans between them. A queue-wide limited queue claims nothing
-- ahead (every slot it may hold is in use), so its threads wait through every
-- claim, and what a claim costs the server is what the queue loses.
--
-- Measured with pg_stat_statements, 20,000 no-op jobs under globalConcurrency
-- 50 on one supervisor, two runs each, alternating: 2.29 and 2.21 ms of server
-- time per claim before, 2.02 and 1.77 after; the unlimited queue's claim
-- (no prefetch) took 1.3-1.45 ms plus 0.25 of planning. In throughput, six
-- interleaved rounds on a fresh database each: 0.70 of the unlimited queue
-- before, 0.75 after (medians).
--
-- What stays as it was:
--   - the lock first, in a statement of its own, and the held slots counted in
--     the next one, so the count sees every claim that committed before the
--     lock was granted (031 says why);
--   - what is counted: running rows and cancelled rows whose run has not
--     ended, less this supervisor's runs passed as ended that still hold their
--     slot (`ended`, returned so the supervisor knows which it found);
--   - the candidates from due_job_ids(), in claim order, locked with SKIP
--     LOCKED; their order in its array is the claim order (priority, run_at,
--     id, a priority at a time), so the rate limit's start slots are numbered
--     from it without reading the rows again;
--   - the claim statement and what it returns, as in 032.
-- limit_state() stays: the per-key claim (key_offers()) still uses it. So does
-- queue_offers(), unused by this version: a supervisor of the version before
-- 032 calls it from the statement it sends, and may still run during a
-- rolling deploy. Folding
-- key_offers() into claim_key_limited() the same way made no difference there
-- (0.58 and 0.59 of the unlimited queue, 100 keys, six rounds): a per-key
-- claim's time is its walk and its offers, not its layers.
CREATE OR REPLACE FUNCTION jobvisor.claim_queue_limited(
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
DECLARE
  t timestamptz;
  held integer;
  last_start timestamptz;
  e_tokens bigint[];
  e_keys text[];
  n integer;
  first_slot timestamptz;
  ids bigint[];
BEGIN
  PERFORM pg_advisory_xact_lock($13, $14);
  t := coalesce($5, clock_timestamp());
  -- After the lock, in a statement of its own (a snapshot taken after it).
  WITH ended AS MATERIALIZED (
    SELECT j.concurrency_key AS k, j.lease_token AS token
      FROM unnest($15, $16) AS e(id, token)
      JOIN jobvisor.jobs AS j ON j.id = e.id
     WHERE j.lease_token = e.token AND j.status = 'running' AND j.locked_by = $1 AND j.queue = $2
  )
  SELECT CASE WHEN $8 IS NOT NULL THEN
           (SELECT count(*) FROM jobvisor.jobs AS j WHERE j.status = 'running' AND j.queue = $2)
           + (SELECT count(*) FROM jobvisor.jobs AS j
               WHERE j.status = 'cancelled' AND j.finished_at IS NULL AND j.queue = $2 AND j.locked_until > t)
           - (SELECT count(*) FROM ended)
         ELSE 0 END,
         CASE WHEN $9 IS NOT NULL THEN
           (SELECT max(r.started_at) FROM jobvisor.rate_starts AS r WHERE r.queue = $2 AND r.key = '')
         END,
         ARRAY(SELECT e.token FROM ended AS e), ARRAY(SELECT e.k FROM ended AS e)
    INTO held, last_start, e_tokens, e_keys;
  n := greatest(0, least($4, coalesce($8 - held, $4)));
  IF $9 IS NOT NULL THEN
    first_slot := greatest(t + $11 * interval '1 millisecond',
                           last_start + ($10 / $9) * interval '1 millisecond');
    n := greatest(0, least(n, ceil(extract(epoch FROM t + ($11 + $12) * interval '1 millisecond'
                                                      - first_slot) * 1000 / ($10 / $9))::int));
  END IF;
  -- In claim order: o_seq below is a candidate's place in this array.
  ids := jobvisor.due_job_ids($2, n, t);
  IF NOT $17 THEN PERFORM set_config('synchronous_commit', 'off', true); END IF;
  RETURN QUERY
  WITH o AS (SELECT x.id AS o_id, x.seq::int AS o_seq FROM unnest(ids) WITH ORDINALITY AS x(id, seq)),
  m AS (
    SELECT n, t AS now, t + $11 * interval '1 millisecond' AS at, e_tokens AS o_ended_tokens, e_keys AS o_ended_keys,
           extract(epoch FROM first_slot - t) * 1000 - $11 - $12 / 2 AS next_free_ms, first_slot
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
     WHERE j.id = ANY (ids) AND coalesce(j.status, '') = 'pending'
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

