-- The runs a claim passes as ended (this supervisor's runs whose tasks have
-- ended, outcomes not yet written: 031 says how they lend their slots) are
-- now read by their ids, through an index, instead of joined with
-- unnest(ids, tokens).
--
-- The join's plan depended on the statistics, which seldom know of a running
-- row (running rows are few and short-lived when ANALYZE samples the table).
-- Planned from such statistics, it walked every running row of this owner and
-- matched each with the runs passed: in a hash table, or, as a benchmark's
-- connections planned it, as a nested loop that compared each running row
-- with every run passed (2,450 pairs dropped for 50 runs in a claim of 50;
-- 200,000 for 400). Its cost grew with the runs in flight, not with the runs
-- passed. The completions went through the same (complete.ts): there a join
-- of unnest() took 25-35 ms for 250 runs, the id = ANY form 2.5.
--
-- Now the rows come from jobs_running_idx by id = ANY (the ids), one probe
-- each, and the fence is lease_token = ANY (the tokens). A claim token is
-- drawn from one sequence for one claim of one job, so a running row whose
-- token is among those passed is exactly a run passed; a row whose token
-- changed (reaped, re-claimed) is not counted, as before.
--
-- Measured, 20,000 no-op jobs under globalConcurrency 50 on one supervisor,
-- five interleaved rounds each on a fresh database: throughput 1.13 of before
-- (the median of the rounds' ratios); the claim's server time
-- (pg_stat_statements) lower in four of the five pairs of rounds, 1.56 and
-- 2.01 ms a claim in the first pair. The per-key claim over 100 keys,
-- whose connections had mostly planned the probe already: 1.00.
--
-- What changes is the ended lookup of claim_queue_limited() (033),
-- limit_state() (035) and key_offers() (036); everything else in them is as it was.

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
      FROM jobvisor.jobs AS j
     WHERE j.id = ANY ($15) AND j.lease_token = ANY ($16) AND j.status = 'running' AND j.locked_by = $1 AND j.queue = $2
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

CREATE OR REPLACE FUNCTION jobvisor.limit_state(
  lock_space integer, lock_key integer, q text, at timestamptz,
  whole boolean, keys text[],
  rate_window_ms float8, rate_per_key boolean, start_delay_ms float8,
  owner text, ended_ids bigint[], ended_tokens bigint[])
RETURNS TABLE (st_key text, st_held integer, st_starts integer, st_last_start timestamptz, st_now timestamptz,
               st_ended_tokens bigint[], st_ended_keys text[])
LANGUAGE plpgsql VOLATILE ROWS 100 SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off
  SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  t timestamptz;
  mine text[];
BEGIN
  IF whole OR (rate_window_ms IS NOT NULL AND NOT rate_per_key) THEN
    PERFORM pg_advisory_xact_lock(lock_space, lock_key);
    mine := keys;
  ELSE
    PERFORM pg_advisory_xact_lock_shared(lock_space, lock_key);
    mine := ARRAY(SELECT k.key FROM unnest(keys) WITH ORDINALITY AS k(key, i)
                   WHERE pg_try_advisory_xact_lock(hashtextextended(k.key, lock_key))
                   ORDER BY k.i);
  END IF;
  t := coalesce(at, clock_timestamp());
  RETURN QUERY
  WITH ended AS MATERIALIZED (
    SELECT j.concurrency_key AS k, j.lease_token AS token
      FROM jobvisor.jobs AS j
     WHERE j.id = ANY (ended_ids) AND j.lease_token = ANY (ended_tokens)
       AND j.status = 'running' AND j.locked_by = owner AND j.queue = q
  ),
  held AS MATERIALIZED (
    SELECT h.k, sum(h.n)::int AS n FROM (
      SELECT j.concurrency_key AS k, count(*) AS n FROM jobvisor.jobs AS j
       WHERE whole AND j.status = 'running' AND j.queue = q GROUP BY 1
      UNION ALL
      SELECT j.concurrency_key, count(*) FROM jobvisor.jobs AS j
       WHERE NOT whole AND j.status = 'running' AND j.queue = q AND j.concurrency_key = ANY (mine) GROUP BY 1
      UNION ALL
      SELECT j.concurrency_key, count(*) FROM jobvisor.jobs AS j
       WHERE j.status = 'cancelled' AND j.finished_at IS NULL AND j.queue = q AND j.locked_until > t GROUP BY 1
      UNION ALL
      SELECT e.k, -count(*) FROM ended AS e GROUP BY 1
    ) AS h GROUP BY h.k
  )
  SELECT NULL::text,
         CASE WHEN whole THEN (SELECT coalesce(sum(h.n), 0)::int FROM held AS h) ELSE 0 END,
         0,
         CASE WHEN rate_window_ms IS NOT NULL AND NOT rate_per_key THEN
           (SELECT max(r.started_at) FROM jobvisor.rate_starts AS r WHERE r.queue = q AND r.key = '')
         END,
         t,
         ARRAY(SELECT e.token FROM ended AS e),
         ARRAY(SELECT e.k FROM ended AS e)
  UNION ALL
  SELECT k.key,
         coalesce(h.n, 0),
         CASE WHEN rate_window_ms IS NOT NULL AND rate_per_key THEN
           (SELECT count(*)::int FROM jobvisor.rate_starts AS r
             WHERE r.queue = q AND r.key = k.key
               AND r.started_at > t + (start_delay_ms - rate_window_ms) * interval '1 millisecond')
         ELSE 0 END,
         NULL::timestamptz, t, NULL::bigint[], NULL::text[]
    FROM unnest(mine) AS k(key)
    LEFT JOIN held AS h ON h.k = k.key;
END
$$;

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
        SELECT j.concurrency_key, -count(*) FROM jobvisor.jobs AS j
         WHERE j.id = ANY (ended_ids) AND j.lease_token = ANY (ended_tokens)
           AND j.status = 'running' AND j.locked_by = owner AND j.queue = q GROUP BY 1
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
