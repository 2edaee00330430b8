-- A per-key claim counts the held slots of the keys it visited only, not of
-- every running row of the queue.
--
-- limit_state() (031) read the queue's running rows in one pass and grouped
-- them by key, whatever the claim needed: the queue-wide limit needs them all
-- (`whole`), a claim limited per key alone only the keys its walk visited.
-- A per-key queue claims ahead (src/supervisor/claim/ahead.ts), so about one
-- job per key is running at once: over 1,000 keys each claim read about 1,000
-- running rows under the queue's lock, through jobs_running_idx, whose dead
-- entries grow with every job that passes. Measured with pg_stat_statements
-- (track = all; 20,000 no-op jobs over 1,000 keys, perKeyConcurrency 1, one
-- supervisor, four runs): that statement took 1.4-10.5 ms of each claim of
-- about 340 jobs (mostly 4-10), and the whole claim 22-30 ms.
--
-- Now, without `whole`, the count probes jobs_running_key_idx (queue,
-- concurrency_key) for the visited keys, an index-only scan (the generic plan
-- keeps it: `whole` is a one-time filter on each branch): 1.6-2.0 ms of a
-- claim of 19-23 ms in four runs. The counts are the same for every key the
-- claim reads (it joins the counts to the visited keys only), and are still
-- read after the queue's lock, in a statement of their own. With `whole`
-- (globalConcurrency) nothing changes.
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
       WHERE whole AND j.status = 'running' AND j.queue = q GROUP BY 1
      UNION ALL
      SELECT j.concurrency_key, count(*) FROM jobvisor.jobs AS j
       WHERE NOT whole AND j.status = 'running' AND j.queue = q AND j.concurrency_key = ANY (keys) GROUP BY 1
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
