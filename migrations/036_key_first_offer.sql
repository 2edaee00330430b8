-- A key with room for one job takes the first pending entry the walk read as
-- its offer, without a second probe of the index (issue 48: a per-key claim
-- cost about 50 us of server time a job over 1,000 keys, against 13 for the
-- plain claim, and a probe per key for the offers was a part of it).
--
-- key_offers()'s walk reads, for each key it visits, the first entry of
-- jobs_pending_key_idx (queue, concurrency_key, priority, run_at, id): until
-- now only its key and priority, from which the offers then probed the index
-- again for the key's due jobs. That first entry is the key's first offer
-- whenever it is due: the offers are the key's pending jobs due now, by
-- priority, then run_at, then id, which is the index's order. So the walk now
-- keeps the entry's run_at and id too (still an index-only read), and a key
-- with room for exactly one job (perKeyConcurrency 1, or one slot left)
-- offers that id when its run_at is due. A key with room for more, or whose
-- first entry is not yet due (a delayed job ahead of due ones at a lower
-- priority), goes the way it went.
--
-- The walk runs before the key locks and the counts, so its entry may be
-- stale by the time it is claimed: another claim may have taken it, run it
-- and put it back as a retry due later. The claim's UPDATE therefore checks
-- that the row is still pending *and due* (run_at <= the claim's now), which
-- it had not needed while every offer was read after the counts; for the
-- other offers the check is always true. A stale entry that is no longer
-- pending is skipped, as before, and its key gets nothing from this claim.
-- A job of a higher priority enqueued after the walk waits for the next claim,
-- as it did: the offers started from the walk's priority already.
CREATE OR REPLACE FUNCTION jobvisor.key_offers(
  lock_space integer, lock_key integer, q text, at timestamptz, places integer,
  global_limit integer, key_limit integer, rate_count integer, rate_window_ms float8, rate_per_key boolean,
  start_delay_ms float8, owner text, ended_ids bigint[], ended_tokens bigint[],
  after_key text, max_keys integer, keyless_window integer,
  weight_keys text[], weights float8[], other_weight float8)
RETURNS TABLE (o_id bigint, o_seq integer, o_i integer, o_budget integer, o_now timestamptz,
               o_keys_visited integer, o_last_key text, o_keyless_hidden boolean,
               o_ended_tokens bigint[], o_ended_keys text[])
LANGUAGE plpgsql VOLATILE ROWS 100 SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off
  SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  keys text[];
  firsts integer[];
  first_run_ats timestamptz[];
  first_ids bigint[];
  mine text[];
BEGIN
  WITH RECURSIVE walk(key, p, r, id, i, wrapped) AS (
    (SELECT f.key, f.p, f.r, f.id, 1, f.wrapped FROM (
       (SELECT j.concurrency_key AS key, j.priority AS p, j.run_at AS r, j.id, true AS wrapped FROM jobvisor.jobs AS j
         WHERE after_key IS NULL AND j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL
         ORDER BY j.concurrency_key, j.priority, j.run_at, j.id LIMIT 1)
       UNION ALL
       (SELECT j.concurrency_key, j.priority, j.run_at, j.id, false FROM jobvisor.jobs AS j
         WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key > after_key
         ORDER BY j.concurrency_key, j.priority, j.run_at, j.id LIMIT 1)
       UNION ALL
       (SELECT j.concurrency_key, j.priority, j.run_at, j.id, true FROM jobvisor.jobs AS j
         WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL AND after_key IS NOT NULL
         ORDER BY j.concurrency_key, j.priority, j.run_at, j.id LIMIT 1)
       LIMIT 1) AS f
     WHERE max_keys > 0)
    UNION ALL
    SELECT n.key, n.p, n.r, n.id, w.i + 1, n.wrapped
      FROM walk AS w,
      LATERAL (
        (SELECT j.concurrency_key AS key, j.priority AS p, j.run_at AS r, j.id, w.wrapped FROM jobvisor.jobs AS j
          WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL AND j.concurrency_key > w.key
          ORDER BY j.concurrency_key, j.priority, j.run_at, j.id LIMIT 1)
        UNION ALL
        (SELECT j.concurrency_key, j.priority, j.run_at, j.id, true FROM jobvisor.jobs AS j
          WHERE NOT w.wrapped AND j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL
          ORDER BY j.concurrency_key, j.priority, j.run_at, j.id LIMIT 1)
        LIMIT 1) AS n
     WHERE w.i < max_keys AND NOT coalesce(n.wrapped AND n.key > after_key, false)
  )
  SELECT coalesce(array_agg(w.key ORDER BY w.i), '{}'), coalesce(array_agg(w.p ORDER BY w.i), '{}'),
         coalesce(array_agg(w.r ORDER BY w.i), '{}'), coalesce(array_agg(w.id ORDER BY w.i), '{}')
    INTO keys, firsts, first_run_ats, first_ids FROM walk AS w;

  -- The keys to lock, when this claim counts per key alone (limit_state() says
  -- when it does not, and then locks the queue and serves every key visited):
  -- of those that look to have room, counted without a lock, the `places`
  -- whose first offer comes first (offers are taken lowest first, and a key
  -- behind `places` others' first offers gets none), 512 at most; each with a
  -- try-lock, so a key another claim holds is left out. limit_state() counts
  -- them again after the locks, which is what the claim goes by.
  IF global_limit IS NULL AND (rate_count IS NULL OR rate_per_key) THEN
    PERFORM pg_advisory_xact_lock_shared(lock_space, lock_key);
    WITH held AS (
      SELECT h.k, sum(h.n)::int AS n FROM (
        SELECT j.concurrency_key AS k, count(*) AS n FROM jobvisor.jobs AS j
         WHERE j.status = 'running' AND j.queue = q AND j.concurrency_key = ANY (keys) GROUP BY 1
        UNION ALL
        SELECT j.concurrency_key, -count(*) FROM unnest(ended_ids, ended_tokens) AS e(id, token)
          JOIN jobvisor.jobs AS j ON j.id = e.id
         WHERE j.lease_token = e.token AND j.status = 'running' AND j.locked_by = owner AND j.queue = q GROUP BY 1
      ) AS h GROUP BY h.k
    ),
    room AS (
      SELECT k.key, k.i, greatest(0, least(places, coalesce(key_limit - coalesce(h.n, 0), places))) AS n,
             (coalesce(h.n, 0) + 1) / coalesce(w.weight, other_weight) AS v
        FROM unnest(keys) WITH ORDINALITY AS k(key, i)
        LEFT JOIN held AS h ON h.k = k.key
        LEFT JOIN unnest(weight_keys, weights) AS w(key, weight) ON w.key = k.key
    ),
    wanted AS (
      SELECT r.key, r.i, row_number() OVER (ORDER BY r.v, r.i) AS rank FROM room AS r WHERE r.n > 0
    )
    SELECT coalesce(array_agg(x.key ORDER BY x.i), '{}') INTO mine
      FROM wanted AS x
     WHERE CASE WHEN x.rank <= least(places, 512) THEN pg_try_advisory_xact_lock(hashtextextended(x.key, lock_key)) END;
  ELSE
    mine := keys;
  END IF;

  RETURN QUERY
  WITH RECURSIVE st AS MATERIALIZED (
    SELECT * FROM jobvisor.limit_state(lock_space, lock_key, q, at, global_limit IS NOT NULL, mine,
                                       rate_window_ms, rate_per_key, start_delay_ms, owner, ended_ids, ended_tokens)
  ),
  qs AS (SELECT s.st_held, s.st_now, s.st_ended_tokens, s.st_ended_keys FROM st AS s WHERE s.st_key IS NULL),
  budget AS (SELECT greatest(0, least(places, coalesce(global_limit - qs.st_held, places))) AS n FROM qs),
  visited AS (
    SELECT k.key, k.p, k.first_at, k.first_id, k.i::int AS i
      FROM unnest(keys, firsts, first_run_ats, first_ids) WITH ORDINALITY AS k(key, p, first_at, first_id, i)
  ),
  priorities(p) AS (
    (SELECT j.priority FROM jobvisor.jobs AS j WHERE j.status = 'pending' AND j.queue = q ORDER BY j.priority LIMIT 1)
    UNION ALL
    SELECT (SELECT j.priority FROM jobvisor.jobs AS j
             WHERE j.status = 'pending' AND j.queue = q AND j.priority > pr.p
             ORDER BY j.priority LIMIT 1)
      FROM priorities AS pr WHERE pr.p IS NOT NULL
  ),
  keyless_head AS (
    SELECT h.id, h.priority, h.run_at, h.concurrency_key
      FROM priorities AS pr, qs,
      LATERAL (SELECT j.id, j.priority, j.run_at, j.concurrency_key FROM jobvisor.jobs AS j
                WHERE j.status = 'pending' AND j.queue = q AND j.priority = pr.p AND j.run_at <= qs.st_now
                  AND (keyless_window IS NOT NULL OR j.concurrency_key IS NULL)
                ORDER BY j.run_at, j.id
                LIMIT coalesce(keyless_window, places)) AS h
     WHERE pr.p IS NOT NULL
     ORDER BY h.priority, h.run_at, h.id
     LIMIT coalesce(keyless_window, places)
  ),
  weighted AS (SELECT w.key, w.weight FROM unnest(weight_keys, weights) AS w(key, weight)),
  room AS (
    SELECT v.key, v.p, v.first_at, v.first_id, v.i, s.st_held AS held, coalesce(w.weight, other_weight) AS weight,
           greatest(0, least(places,
                             coalesce(key_limit - s.st_held, places),
                             CASE WHEN rate_per_key THEN rate_count - s.st_starts ELSE places END)) AS n
      FROM visited AS v
      JOIN st AS s ON s.st_key = v.key
      LEFT JOIN weighted AS w ON w.key = v.key
  ),
  offers AS (
    SELECT r.first_id AS id, r.i, (r.held + 1) / r.weight AS v
      FROM room AS r, qs
     WHERE r.n = 1 AND r.first_at <= qs.st_now
    UNION ALL
    SELECT x.id, r.i, (r.held + x.rn) / r.weight AS v
      FROM room AS r, qs,
      LATERAL (WITH RECURSIVE kp(p) AS (
                 SELECT r.p
                 UNION ALL
                 SELECT (SELECT j.priority FROM jobvisor.jobs AS j
                          WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key = r.key AND j.priority > kp.p
                          ORDER BY j.priority LIMIT 1)
                   FROM kp WHERE kp.p IS NOT NULL
               )
               SELECT y.id, row_number() OVER () AS rn FROM (
                 SELECT z.id FROM kp,
                 LATERAL (SELECT j.id FROM jobvisor.jobs AS j
                           WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key = r.key
                             AND j.priority = kp.p AND j.run_at <= qs.st_now
                           ORDER BY j.run_at, j.id LIMIT r.n) AS z
                  WHERE kp.p IS NOT NULL
                  LIMIT r.n) AS y) AS x
     WHERE r.n > 1 OR (r.n = 1 AND r.first_at > qs.st_now)
    UNION ALL
    SELECT kl.id, 0, row_number() OVER (ORDER BY kl.priority, kl.run_at, kl.id) / other_weight
      FROM (SELECT h.id, h.priority, h.run_at FROM keyless_head AS h WHERE h.concurrency_key IS NULL
             ORDER BY h.priority, h.run_at, h.id LIMIT places) AS kl
  ),
  chosen AS (
    SELECT f.id, f.i, row_number() OVER (ORDER BY f.v, f.i, f.id)::int AS seq
      FROM offers AS f ORDER BY f.v, f.i, f.id LIMIT (SELECT b.n FROM budget AS b)
  )
  SELECT NULL::bigint, 0, 0, (SELECT b.n FROM budget AS b), qs.st_now, cardinality(keys), keys[cardinality(keys)],
         keyless_window IS NOT NULL AND (SELECT count(*) FROM keyless_head) >= keyless_window
           AND (SELECT count(*) FROM keyless_head AS h WHERE h.concurrency_key IS NULL) < places,
         qs.st_ended_tokens, qs.st_ended_keys
    FROM qs
  UNION ALL
  SELECT c.id, c.seq, c.i, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM chosen AS c;
END
$$;

-- The claim of 032, now also checking that an offer is still due (see above).
CREATE OR REPLACE FUNCTION jobvisor.claim_key_limited(
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
       AND j.run_at <= m.now
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
