-- key_offers()'s count of the visited keys' running rows, made before the key
-- locks to choose which keys to lock (migration 035), now looks each key up in
-- a map (jsonb, key to count) instead of joining the keys with the counts.
--
-- Its plan depended on the statistics. key_offers() keeps one plan per
-- connection (force_generic_plan), made at its first call, and a generic plan
-- knows neither how many keys a walk visits (unnest: an estimate of 10) nor,
-- when the statistics were gathered with little running, how many keys hold a
-- slot (an estimate of 2). Planned so, the join was a nested loop that compared
-- every visited key with every counted one: over 1,000 keys, a million text
-- comparisons, 11 ms of a 25-ms claim. Planned from other statistics it was a
-- hash join, 1.7-2.4 ms. Which one a connection got was chance: in the perkey
-- benchmark (20,000 jobs over 1,000 keys, perKeyConcurrency 1, each run on a
-- fresh database), 4 runs of 10 got the nested loop (10.8-12.5 ms a count)
-- and ran at 12,300-13,600 jobs/s; the rest at 14,600-23,400.
--
-- A map built from the counts and read once per key has no join to plan: its
-- cost grows with the keys, whatever the statistics say. Measured the same
-- way, 10 runs interleaved with 10 of 037's, it counted in 2.1-3.1 ms in
-- every run (the lucky hash join: 1.7-2.4), and the runs' median went from
-- 14,879 to 20,911 jobs/s (the median of the rounds' ratios 1.30).
--
-- A key with no count is not in the map (0 held), as a key without a row in
-- the join was; a NULL key (an ended run without a key) is left out of it.
-- Everything else in key_offers() is as migration 037 left it; same arguments
-- and results.
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
    -- A map from key to count, looked up per key (migration 038): no join
    -- whose plan depends on the statistics.
    counts AS (SELECT coalesce(jsonb_object_agg(h.k, h.n), '{}') AS m FROM held AS h WHERE h.k IS NOT NULL),
    room AS (
      SELECT k.key, k.i, greatest(0, least(places, coalesce(key_limit - coalesce((c.m ->> k.key)::int, 0), places))) AS n,
             (coalesce((c.m ->> k.key)::int, 0) + 1) / coalesce(w.weight, other_weight) AS v
        FROM counts AS c, unnest(keys) WITH ORDINALITY AS k(key, i)
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
