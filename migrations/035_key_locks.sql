-- A per-key claim takes its keys' locks, not the queue's: two supervisors
-- claiming one per-key queue run their claims side by side.
--
-- Until now every limited claim took the queue's advisory lock in
-- limit_state() and held it to its commit: the held-slot count, the offers and
-- the UPDATE, about three quarters of a claim over 1,000 keys. A second
-- supervisor waited for that lock on every claim, and two supervisors on one
-- per-key queue ran slower than one (BENCHMARKS.md: 0.78 of one with
-- perKeyConcurrency 1 over 1,000 keys), where issue 48 asks for no slower.
--
-- A limit per key needs only that no two claims count the same key at once:
-- a claim limited per key alone now holds the queue's lock *shared*, and
-- takes the locks of the keys it means to serve with try-locks, counting and
-- serving only the keys it got. A key another claim holds is skipped, as a
-- key at its limit is (its row is left out, so key_offers() offers nothing
-- for it; the claim's `keys_visited` still counts it, and its cursor moves
-- past it): the other claim is filling it, and the next claim finds it as that
-- one left it. A try-lock never waits, so key locks cannot deadlock. The
-- counts are read in the statement after the locks, with a snapshot taken
-- after them, as they were after the queue's lock: a claim that held a key
-- committed before its lock was released, so its rows are counted.
--
-- Which keys it locks: a walk visits more keys than it serves (most of them
-- at their limit, when a queue claims ahead), and a key locked is a key the
-- other claim cannot serve, so a claim that locked every key it visited left
-- the other nothing. key_offers() first counts the visited keys' running rows
-- without a lock (the claim's own ended runs taken off, as limit_state()
-- does), and locks those that look to have room and whose first offer is among
-- the first `places` (a claim locks no more keys than the jobs it may take),
-- and at most 512. That count is only a guess at which keys to lock;
-- limit_state() counts the keys locked again, after the locks, and the claim
-- goes by that. A key that filled meanwhile gets nothing; one that freed
-- meanwhile waits for the next claim.
--
-- Why at most 512: a claim holds its advisory locks to its commit, in the
-- server's shared lock table, which holds max_locks_per_transaction x
-- max_connections entries (6,400 by default) for every session at once; a
-- full table fails every statement that needs a lock. Each supervisor runs one
-- claim per queue at a time, for a few milliseconds. A claim with room for
-- more keys than that takes the rest in its next claim.
--
-- The queue's lock is still taken exclusively, and no key lock, when the
-- claim counts the whole queue: globalConcurrency (`whole`) or a queue-wide
-- rate limit. It waits for every per-key claim under way (they hold it
-- shared), and they for it, so a supervisor configured with a queue-wide limit
-- and one without (a rolling change of config) still never both take a key's
-- last slot.
--
-- The key's lock is the single-bigint advisory lock hashtextextended(key,
-- queue's lock key): two keys of a queue that hash alike share a lock, which
-- only makes one claim skip a key another holds.
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
      FROM unnest(ended_ids, ended_tokens) AS e(id, token)
      JOIN jobvisor.jobs AS j ON j.id = e.id
     WHERE j.lease_token = e.token AND j.status = 'running' AND j.locked_by = owner AND j.queue = q
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

-- The per-key choice of 031, with the keys to lock chosen before limit_state().
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
  mine text[];
BEGIN
  WITH RECURSIVE walk(key, p, i, wrapped) AS (
    (SELECT f.key, f.p, 1, f.wrapped FROM (
       (SELECT j.concurrency_key AS key, j.priority AS p, true AS wrapped FROM jobvisor.jobs AS j
         WHERE after_key IS NULL AND j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL
         ORDER BY j.concurrency_key, j.priority LIMIT 1)
       UNION ALL
       (SELECT j.concurrency_key, j.priority, false FROM jobvisor.jobs AS j
         WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key > after_key
         ORDER BY j.concurrency_key, j.priority LIMIT 1)
       UNION ALL
       (SELECT j.concurrency_key, j.priority, true FROM jobvisor.jobs AS j
         WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL AND after_key IS NOT NULL
         ORDER BY j.concurrency_key, j.priority LIMIT 1)
       LIMIT 1) AS f
     WHERE max_keys > 0)
    UNION ALL
    SELECT n.key, n.p, w.i + 1, n.wrapped
      FROM walk AS w,
      LATERAL (
        (SELECT j.concurrency_key AS key, j.priority AS p, w.wrapped FROM jobvisor.jobs AS j
          WHERE j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL AND j.concurrency_key > w.key
          ORDER BY j.concurrency_key, j.priority LIMIT 1)
        UNION ALL
        (SELECT j.concurrency_key, j.priority, true FROM jobvisor.jobs AS j
          WHERE NOT w.wrapped AND j.status = 'pending' AND j.queue = q AND j.concurrency_key IS NOT NULL
          ORDER BY j.concurrency_key, j.priority LIMIT 1)
        LIMIT 1) AS n
     WHERE w.i < max_keys AND NOT coalesce(n.wrapped AND n.key > after_key, false)
  )
  SELECT coalesce(array_agg(w.key ORDER BY w.i), '{}'), coalesce(array_agg(w.p ORDER BY w.i), '{}')
    INTO keys, firsts FROM walk AS w;

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
  visited AS (SELECT k.key, k.p, k.i::int AS i FROM unnest(keys, firsts) WITH ORDINALITY AS k(key, p, i)),
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
    SELECT v.key, v.p, v.i, s.st_held AS held, coalesce(w.weight, other_weight) AS weight,
           greatest(0, least(places,
                             coalesce(key_limit - s.st_held, places),
                             CASE WHEN rate_per_key THEN rate_count - s.st_starts ELSE places END)) AS n
      FROM visited AS v
      JOIN st AS s ON s.st_key = v.key
      LEFT JOIN weighted AS w ON w.key = v.key
  ),
  offers AS (
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
     WHERE r.n > 0
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
