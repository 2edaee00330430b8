-- What a limited queue's claim takes, chosen in functions whose plans are kept.
--
-- A limited claim (src/queue/claim_limited_sql.ts) is now one statement: the
-- UPDATE that claims, fed by the ids one of the functions below chooses. Until
-- now the whole choice was part of that statement, and an unnamed statement is
-- planned every time it runs (src/queue/sql.ts says why): the per-key claim's
-- plan cost 5.4 ms of CPU per claim on a loaded 2-core machine, more than
-- everything it then did for a claim of 50 (claim_key_limited: 7.8 ms a claim
-- of 12, 3.9 the queue-wide one, against 2.1 for the plain claim of 50). In
-- PL/pgSQL the plans are made once per connection and kept, as for
-- due_job_ids() (010): planning settings ride on the functions (no sequential
-- scan, no bitmap, no JIT), so a plan made while the table was tiny stays an
-- index walk when it has grown.
--
-- Kept only if generic: PL/pgSQL hands each statement's parameters to the plan
-- cache, which plans the first five calls for their values and then keeps a
-- generic plan only if its estimated cost is no higher than theirs. For these
-- statements (CTEs over arrays and a recursive walk) the generic estimate
-- came out higher, so every call was planned again: limit_state() took
-- 0.72 ms a call where its statements ran in 0.07, key_offers() 3.77 ms
-- (pgbench, 20,000 pending jobs over 100 keys, 50 running, load average 5).
-- With plan_cache_mode = force_generic_plan they take 0.21 and 1.82 ms, and
-- queue_offers() 0.38 instead of 1.02. A generic plan cannot use the values
-- of a call, and needs none: the settings above leave it only index walks.
--
-- The queue's lock. A limited claim may count held slots only once it holds
-- the queue's advisory lock, with a snapshot taken after it: under READ
-- COMMITTED a statement's snapshot is taken when it starts, so a count in the
-- claim statement itself would miss a claim that committed while it waited
-- for the lock, and two claims could take the last slot. The claim used to
-- take the lock in a statement of its own, in a transaction of four round
-- trips (BEGIN, lock, claim, COMMIT), holding the lock across two of them.
-- Now limit_state() takes it, and reads what the limits count in its own
-- statement: each statement in a VOLATILE PL/pgSQL function gets a new
-- snapshot, so what it reads is as of after the lock. The lock is held only
-- while the claim statement runs, and released at its commit. The rest of the
-- claim may read with an older snapshot: a job it takes that an earlier claim
-- took meanwhile is no longer pending when the claim's UPDATE re-checks the
-- row, so it is skipped, never taken twice.

-- What the limits count, read after the queue's lock.
--
-- Held slots are counted from the jobs table, as before: running rows, and
-- cancelled rows whose run has not ended (014_cancelled_runs.sql), of the
-- queue and of each key asked for; never from a counter a crash could leak.
-- They are read in one pass over the queue's running rows (what is in flight,
-- a row each), whatever the number of keys asked for: counted per key, one
-- probe each, the planner (whose statistics seldom know of running rows) took
-- jobs_running_idx for every probe and read every running row per key, 1.3 s
-- for 1,000 keys.
--
-- One exception, `ended`: runs of this supervisor (`owner`) whose tasks have
-- ended but whose outcomes are not yet written, named by id and claim token.
-- Their rows are still running, but their tasks are not: the claim may give
-- their slots to new jobs at once instead of after the outcome's write, and
-- the supervisor passes each such run until a claim spends its slot, never
-- after (src/supervisor/claim/transfers.ts). Such a row is not counted, but
-- reported (st_ended_*), so the supervisor knows which runs a claim found. A
-- supervisor killed after lending a slot leaves both rows running: the slot
-- is counted twice until the reaper returns them, never less than once.
--
-- Rate limits: the queue's last start slot (queue-wide pacing) and each key's
-- starts within the window (perKey), from rate_starts.
--
-- One row for the queue (st_key NULL: its held slots when `whole`, the ended
-- runs found, the last start slot, and the database's clock after the lock,
-- or the pinned time `at`), then one per key of `keys`.
CREATE FUNCTION jobvisor.limit_state(
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
BEGIN
  PERFORM pg_advisory_xact_lock(lock_space, lock_key);
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
       WHERE j.status = 'running' AND j.queue = q GROUP BY 1
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
    FROM unnest(keys) AS k(key)
    LEFT JOIN held AS h ON h.k = k.key;
END
$$;

-- A queue-wide limited claim's choice (globalConcurrency and/or a queue-wide
-- rate limit): what the limits leave (`budget`), then the plain claim's
-- candidates up to that (due_job_ids(), locked, in claim order, `o_seq`).
-- `places`: the supervisor's free places. A rate limit paces its starts: the
-- first free slot is a window/count after the last one handed out (but at
-- least `start_delay_ms` ahead), and a claim takes the slots up to `horizon_ms`
-- ahead. One row with o_id NULL carries what the claim needs besides the ids:
-- the budget, when half the horizon is free again (o_next_free_ms), the first
-- slot, the clock after the lock, and the ended runs found.
CREATE FUNCTION jobvisor.queue_offers(
  lock_space integer, lock_key integer, q text, at timestamptz, places integer,
  global_limit integer, rate_count integer, rate_window_ms float8, start_delay_ms float8, horizon_ms float8,
  owner text, ended_ids bigint[], ended_tokens bigint[])
RETURNS TABLE (o_id bigint, o_seq integer, o_budget integer, o_next_free_ms float8, o_first_slot timestamptz,
               o_now timestamptz, o_ended_tokens bigint[], o_ended_keys text[])
LANGUAGE plpgsql VOLATILE ROWS 100 SET jit = off SET enable_seqscan = off SET enable_bitmapscan = off
  SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  s record;
  first_slot timestamptz;
  n integer;
BEGIN
  SELECT * INTO s FROM jobvisor.limit_state(lock_space, lock_key, q, at, global_limit IS NOT NULL, NULL,
                                            rate_window_ms, false, start_delay_ms, owner, ended_ids, ended_tokens);
  n := greatest(0, least(places, coalesce(global_limit - s.st_held, places)));
  IF rate_count IS NOT NULL THEN
    first_slot := greatest(s.st_now + start_delay_ms * interval '1 millisecond',
                           s.st_last_start + (rate_window_ms / rate_count) * interval '1 millisecond');
    n := greatest(0, least(n, ceil(extract(epoch FROM s.st_now + (start_delay_ms + horizon_ms) * interval '1 millisecond'
                                                      - first_slot) * 1000 / (rate_window_ms / rate_count))::int));
  END IF;
  RETURN QUERY
  SELECT NULL::bigint, 0, n,
         extract(epoch FROM first_slot - s.st_now) * 1000 - start_delay_ms - horizon_ms / 2,
         first_slot, s.st_now, s.st_ended_tokens, s.st_ended_keys
  UNION ALL
  SELECT c.id, c.seq::int, n, NULL, NULL, NULL, NULL, NULL
    FROM (SELECT j.id, row_number() OVER (ORDER BY j.priority, j.run_at, j.id) AS seq
            FROM jobvisor.jobs AS j
           WHERE j.id = ANY ((SELECT jobvisor.due_job_ids(q, n, s.st_now))::bigint[])) AS c;
END
$$;

-- A per-key limited claim's choice (perKeyConcurrency and/or a per-key rate
-- limit), in claim order (`o_seq`), each with the walk index of its key
-- (`o_i`; 0 for a job without a key).
--
-- No head-of-line blocking: the walk visits the distinct keys with pending
-- jobs through jobs_pending_key_idx, one index probe per key (a loose index
-- scan), so a key with 10,000 pending jobs costs one step like any other. It
-- starts after `after_key` (where the last claim stopped) and wraps round to
-- the first key once, ending before it passes where it began, so one claim
-- visits every key once at most, and at most `max_keys` of them (the
-- supervisor sizes that to what its last claims needed). limit_state() then
-- counts the visited keys' held slots, after the lock; each key with room
-- offers its first jobs in claim order, as many as its limits leave.
--
-- Which offers are taken, by weight: a key's n-th offer is placed at
-- (held + n) / weight, lowest first (ties in the order visited), so over time
-- each key holds slots in proportion to its weight (`weight_keys`/`weights`,
-- every other key `other_weight`). With every weight 1 that is round robin:
-- every key's next job, keys in the order visited, the keys holding fewest
-- first. Jobs without a key have no per-key limit and take part as one more
-- key, holding nothing, with the other keys' weight.
--
-- A key's offers are read a priority at a time (`kp`: the key's first pending
-- priority, found by the walk's own probe, then each next one), each from its
-- first due job, so a key's jobs not yet due are never read. Read in claim
-- order with `run_at <= now` as a filter, a tenant whose jobs keep failing
-- made every claim of the queue step over all of its retries waiting out
-- their backoff: 18 ms per claim behind 100,000 of them, under the queue's
-- lock, growing with the backlog. The levels are taken in order and the scan
-- stops once the key's room is filled.
--
-- Jobs without a key have no index of their own (one would cost every plain
-- job an index entry at enqueue), so finding them means reading the queue's
-- due jobs in claim order and the row behind each (a priority at a time, from
-- the first due job of each, so jobs not yet due are never read). Read to the
-- end, that cost grows with the backlog: 18 ms per claim behind 100,000 due
-- jobs of keys at their limit. With `keyless_window` the read stops after
-- that many due jobs; o_keyless_hidden then says whether jobs without a key
-- may lie beyond (the window was full and held fewer than asked for), and the
-- supervisor reads to the end now and then (src/supervisor/claim/limited.ts).
--
-- The walk's first step is written as one branch per case (no cursor, after
-- the cursor, wrapped round): with `after_key IS NULL OR key > after_key` the
-- kept plan could not use the cursor as an index bound and filtered the
-- index from its start, 3,000 entries and heap fetches for 100 keys, 1.2 ms
-- of every claim.
--
-- Per-key data is joined to the keys by hash, never by a loop over a CTE: the
-- planner guesses a recursive walk at a few dozen rows, and a semi-join of the
-- running rows against 1,000 visited keys as a nested loop compared 234,000
-- pairs, 150 ms of a 224-ms claim.
--
-- One row with o_id NULL carries the budget, the clock after the lock, how
-- many keys were visited and the last of them, o_keyless_hidden and the ended
-- runs found.
CREATE FUNCTION jobvisor.key_offers(
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

  RETURN QUERY
  WITH RECURSIVE st AS MATERIALIZED (
    SELECT * FROM jobvisor.limit_state(lock_space, lock_key, q, at, global_limit IS NOT NULL, keys,
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
