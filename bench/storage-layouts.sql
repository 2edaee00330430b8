-- bench/storage-layouts.sql: what each way of storing finished jobs costs, in
-- plain SQL, over one job's whole life: enqueue, claim, done, removal.
--
-- Run from the repository root (it runs `npx tsx src/cli/bin.ts migrate` to get
-- the real jobvisor.jobs table), against a PostgreSQL of its own so that the WAL
-- is this script's alone (pg_current_wal_insert_lsn is cluster-wide):
--
--   psql -h 127.0.0.1 -p 5440 -U postgres -v jobs=100000 -f bench/storage-layouts.sql
--
-- Variables (all optional): jobs (default 100000); checkpoint (default on: a
-- CHECKPOINT before every phase, so each phase starts with no page imaged yet
-- and pays a full-page image for every page it touches; off: one CHECKPOINT
-- before each layout only, so its fresh tables' pages are never imaged: the
-- two settings bracket what a real checkpoint interval costs); reset (drop the
-- results kept from earlier runs). Needs a superuser (CHECKPOINT, CREATE
-- DATABASE, pg_walinspect). It creates and drops the databases stl_template,
-- stl_today, stl_delete, stl_partitioned and stl_history, and keeps every run's
-- figures in stl_results; each run prints its own figures and then the medians
-- of all runs kept for the same jobs and checkpoint setting (run it 3 times).
--
-- The layouts, each in a fresh database copied from a freshly migrated one:
--   today        the migrated table (11 indexes, fillfactor 50); done = the
--                UPDATE of queue/complete.ts; removal = the cleanup DELETE of
--                queue/cleanup.ts (batches of 5,000, by ctid), then VACUUM.
--   delete       the same table; done = a DELETE fenced like the UPDATE.
--   partitioned  jobvisor.jobs LIST-partitioned on status: jobs_live (pending,
--                running, blocked, failed; the 9 indexes that concern those
--                statuses, fillfactor 50) and jobs_finished (done, cancelled;
--                indexes on id and finished_at only); done = the same UPDATE,
--                which moves the row to jobs_finished; removal = TRUNCATE.
--   history      the migrated table plus an insert-only jobs_history (indexes
--                on id and finished_at); done = WITH d AS (DELETE … RETURNING)
--                INSERT INTO jobs_history; removal = TRUNCATE jobs_history.
--
-- Phases, each a procedure that commits after every batch as the real system
-- does (one transaction per statement), synchronous_commit left as configured:
--   enqueue   N jobs, INSERT … SELECT generate_series, 1,000 per statement;
--   claim     1,000 per statement: a CTE of due pending ids in claim order
--             (ORDER BY priority, run_at, id LIMIT 1000 FOR UPDATE SKIP LOCKED),
--             then the UPDATE of queue/claim.ts (running, attempts + 1, a
--             lease token, locked_by, locked_until, started_at); the ids and
--             tokens go to a temporary table (no WAL) for the done phase;
--   complete  1,000 per statement, fenced by id, status, owner and token,
--             with complete.ts' counting and settle_parents column;
--   remove    as the layout says (nothing for `delete`);
--   vacuum    VACUUM jobvisor.jobs: every layout leaves dead row versions (the
--             pending and running versions of each job, and for `today` the
--             deleted done rows) that a vacuum must reclaim; for `today` it is
--             the second half of the removal.
-- Each phase records wall time (clock_timestamp around the CALL), WAL bytes
-- (pg_current_wal_insert_lsn before and after), WAL records and full-page image
-- bytes (pg_walinspect), the tables' and indexes' sizes after it, and whether a
-- checkpoint began inside it. Autovacuum is switched off on the measured tables
-- (a reloption, nothing else in the cluster changes) so that no vacuum lands at
-- random inside a phase; ANALYZE runs between phases, outside the measurements,
-- standing in for the autoanalyze the real table gets (scale factor 0.02).
-- Not measured here: the real claim's synchronous_commit off (it changes the
-- claim's time, not its WAL), the real enqueue's unnest of client arrays, the
-- claim's payload columns, concurrency, and claims interleaved with dones.

\set ON_ERROR_STOP on
\set QUIET on
\pset pager off
\pset footer off
\if :{?jobs}
\else
  \set jobs 100000
\endif
\if :{?checkpoint}
\else
  \set checkpoint on
\endif
\if :checkpoint
  \set pre 'CHECKPOINT;'
\else
  \set pre ''
\endif

\connect postgres
SELECT 'CREATE DATABASE stl_results' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'stl_results') \gexec
\connect stl_results
\if :{?reset}
  DROP TABLE IF EXISTS results, runs;
\endif
CREATE TABLE IF NOT EXISTS runs (
  run int PRIMARY KEY, jobs int NOT NULL, checkpointed boolean NOT NULL,
  started timestamptz NOT NULL DEFAULT now(), version text NOT NULL, settings jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS results (
  run int NOT NULL, layout text NOT NULL, phase text NOT NULL,
  ms float8 NOT NULL, wal_bytes numeric NOT NULL, wal_records bigint, fpi_bytes numeric,
  checkpoint_inside boolean, table_bytes bigint, index_bytes bigint, sizes jsonb, rmgr jsonb,
  PRIMARY KEY (run, layout, phase));
INSERT INTO runs (run, jobs, checkpointed, version, settings)
SELECT coalesce(max(run), 0) + 1, :jobs, :'checkpoint'::boolean, version(),
       (SELECT jsonb_object_agg(name, setting) FROM pg_settings
         WHERE name IN ('shared_buffers', 'max_wal_size', 'synchronous_commit', 'full_page_writes',
                        'wal_compression', 'data_checksums', 'wal_log_hints', 'fsync', 'wal_level'))
  FROM runs
RETURNING run AS run \gset
\echo run :run: :jobs jobs, checkpoint before each phase: :checkpoint

-- A freshly migrated database, the template of every layout's.
DROP DATABASE IF EXISTS stl_template WITH (FORCE);
CREATE DATABASE stl_template;
SELECT CASE WHEN :'HOST' LIKE '/%'
            THEN format('postgres://%s@localhost:%s/stl_template?host=%s', :'USER', :'PORT', :'HOST')
            ELSE format('postgres://%s@%s:%s/stl_template', :'USER', :'HOST', :'PORT') END AS migrate_url \gset
\setenv DATABASE_URL :migrate_url
\! npx tsx src/cli/bin.ts migrate 2>&1 | tail -n 1
\connect stl_template
SELECT count(*) AS migrations FROM jobvisor.migrations \gset
\echo migrated: :migrations migrations
CREATE EXTENSION pg_walinspect;
ALTER TABLE jobvisor.jobs SET (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE SCHEMA bench;

-- One row per phase; unlogged, so recording writes no WAL.
CREATE UNLOGGED TABLE bench.results (
  layout text, phase text, ms float8, wal_bytes numeric, wal_records bigint, fpi_bytes numeric,
  checkpoint_inside boolean, table_bytes bigint, index_bytes bigint, sizes jsonb, rmgr jsonb);

-- The job tables of the layout (jobs, its partitions, jobs_history): table
-- (heap, TOAST, free space and visibility maps) and index bytes.
CREATE FUNCTION bench.sizes(OUT table_bytes bigint, OUT index_bytes bigint, OUT sizes jsonb)
LANGUAGE sql AS $$
  SELECT sum(pg_table_size(c.oid))::bigint, sum(pg_indexes_size(c.oid))::bigint,
         jsonb_object_agg(c.relname, jsonb_build_object('table', pg_table_size(c.oid), 'indexes', pg_indexes_size(c.oid),
                                                        'index_count', (SELECT count(*) FROM pg_index AS i WHERE i.indrelid = c.oid)))
    FROM pg_class AS c
   WHERE c.relnamespace = 'jobvisor'::regnamespace AND c.relkind = 'r' AND c.relname LIKE 'jobs%'
$$;

CREATE FUNCTION bench.mark() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('bench.l0', pg_current_wal_insert_lsn()::text, false);
  PERFORM set_config('bench.t0', clock_timestamp()::text, false);
END $$;

CREATE FUNCTION bench.record(p_phase text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  t1 timestamptz := clock_timestamp();
  l1 pg_lsn := pg_current_wal_insert_lsn();
  t0 timestamptz := current_setting('bench.t0')::timestamptz;
  l0 pg_lsn := current_setting('bench.l0')::pg_lsn;
  recs bigint := 0;
  fpi numeric := 0;
  by_rmgr jsonb;
  s record;
BEGIN
  IF l1 > l0 THEN
    SELECT sum(w.count), sum(w.fpi_size),
           jsonb_object_agg(w."resource_manager/record_type", jsonb_build_object('records', w.count, 'bytes', w.combined_size, 'fpi', w.fpi_size))
             FILTER (WHERE w.count > 0)
      INTO recs, fpi, by_rmgr
      FROM pg_get_wal_stats(l0, least(l1, pg_current_wal_flush_lsn())) AS w;
  END IF;
  SELECT * INTO s FROM bench.sizes();
  INSERT INTO bench.results
  VALUES (substr(current_database(), 5), p_phase, extract(epoch FROM t1 - t0) * 1000, pg_wal_lsn_diff(l1, l0),
          recs, fpi, (SELECT redo_lsn FROM pg_control_checkpoint()) > l0, s.table_bytes, s.index_bytes, s.sizes, by_rmgr);
END $$;

CREATE PROCEDURE bench.enqueue(n int) LANGUAGE plpgsql AS $$
DECLARE b int := 0;
BEGIN
  WHILE b * 1000 < n LOOP
    INSERT INTO jobvisor.jobs (queue, kind, payload)
    SELECT 'default', 'bench', jsonb_build_object('n', g)
      FROM generate_series(b * 1000 + 1, least(b * 1000 + 1000, n)) AS g;
    COMMIT;
    b := b + 1;
  END LOOP;
END $$;

-- `AND j.status = 'pending'` in the UPDATE (the real one has no status test:
-- the ids are locked) lets the partitioned layout prune to jobs_live; the same
-- text runs for every layout.
CREATE PROCEDURE bench.claim(owner text DEFAULT 'bench-1') LANGUAGE plpgsql AS $$
DECLARE got int;
BEGIN
  LOOP
    WITH due AS (
      SELECT j.id FROM jobvisor.jobs AS j
       WHERE j.status = 'pending' AND j.queue = 'default' AND j.run_at <= now()
       ORDER BY j.priority, j.run_at, j.id
       LIMIT 1000
       FOR UPDATE SKIP LOCKED
    ), claimed AS (
      UPDATE jobvisor.jobs AS j
         SET status = 'running',
             attempts = least(j.attempts, 2147483646) + 1,
             lease_token = nextval('jobvisor.lease_token_seq'),
             locked_by = owner,
             locked_until = now() + 60000 * interval '1 millisecond',
             started_at = now()
       WHERE j.id = ANY (ARRAY(SELECT id FROM due)) AND j.status = 'pending'
      RETURNING j.id, j.lease_token
    )
    INSERT INTO pg_temp.claimed_batches (ids, tokens)
    SELECT array_agg(id), array_agg(lease_token) FROM claimed HAVING count(*) > 0;
    GET DIAGNOSTICS got = ROW_COUNT;
    COMMIT;
    EXIT WHEN got = 0;
  END LOOP;
END $$;

-- queue/cleanup.ts DELETE_FINISHED with both retentions 0, 5,000 a batch, under
-- its `indexWalk` settings, one transaction per batch.
CREATE PROCEDURE bench.cleanup() LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  LOOP
    PERFORM set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
            set_config('enable_sort', 'off', true);
    WITH gone AS (
      DELETE FROM jobvisor.jobs AS d
       WHERE d.ctid = ANY (ARRAY(
               SELECT j.ctid FROM jobvisor.jobs AS j
                WHERE j.status IN ('done', 'cancelled', 'failed')
                  AND j.finished_at < now() - least(0::float8, 0::float8) * interval '1 millisecond'
                  AND j.finished_at < now() - CASE WHEN j.status = 'failed' THEN 0::float8 ELSE 0::float8 END * interval '1 millisecond'
                  AND CASE WHEN j.has_dependents THEN NOT jobvisor.has_live_dependents(j.id) ELSE true END
                ORDER BY j.finished_at
                LIMIT 5000))
         AND d.status IN ('done', 'cancelled', 'failed')
         AND d.finished_at < now() - CASE WHEN d.status = 'failed' THEN 0::float8 ELSE 0::float8 END * interval '1 millisecond'
      RETURNING d.id, d.queue, d.kind, d.status, d.parents_waiting IS NOT NULL AS child
    ), edges AS (
      DELETE FROM jobvisor.job_dependencies WHERE child_id = ANY (ARRAY(SELECT id FROM gone WHERE child))
    )
    SELECT coalesce(sum(c), 0) INTO n FROM (SELECT queue, kind, status, count(*) AS c FROM gone GROUP BY 1, 2, 3) AS s;
    COMMIT;
    EXIT WHEN n = 0;
  END LOOP;
END $$;

-- The done write of queue/complete.ts (COMPLETE_JOBS), one claimed batch each.
CREATE PROCEDURE bench.complete_update(owner text DEFAULT 'bench-1') LANGUAGE plpgsql AS $$
DECLARE r record; written int; missed text[]; released int;
BEGIN
  FOR r IN SELECT ids, tokens FROM pg_temp.claimed_batches LOOP
    WITH u AS (
      UPDATE jobvisor.jobs AS j
         SET status = 'done', locked_until = NULL, finished_at = now(), result = NULL
       WHERE j.id = ANY (r.ids) AND j.status = 'running' AND j.locked_by = owner
         AND j.lease_token = ANY (r.tokens)
      RETURNING j.id, j.has_dependents
    )
    SELECT count(*)::int, CASE WHEN count(*) < cardinality(r.ids) THEN array_agg(id)::text[] END,
           jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents))
      INTO written, missed, released
      FROM u;
    IF written <> cardinality(r.ids) THEN RAISE EXCEPTION 'done wrote % of %', written, cardinality(r.ids); END IF;
    COMMIT;
  END LOOP;
END $$;

-- The same, as a DELETE with the same fence.
CREATE PROCEDURE bench.complete_delete(owner text DEFAULT 'bench-1') LANGUAGE plpgsql AS $$
DECLARE r record; written int; missed text[]; released int;
BEGIN
  FOR r IN SELECT ids, tokens FROM pg_temp.claimed_batches LOOP
    WITH u AS (
      DELETE FROM jobvisor.jobs AS j
       WHERE j.id = ANY (r.ids) AND j.status = 'running' AND j.locked_by = owner
         AND j.lease_token = ANY (r.tokens)
      RETURNING j.id, j.has_dependents
    )
    SELECT count(*)::int, CASE WHEN count(*) < cardinality(r.ids) THEN array_agg(id)::text[] END,
           jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents))
      INTO written, missed, released
      FROM u;
    IF written <> cardinality(r.ids) THEN RAISE EXCEPTION 'done wrote % of %', written, cardinality(r.ids); END IF;
    COMMIT;
  END LOOP;
END $$;

-- The same DELETE, its rows written to jobs_history as done rows.
CREATE PROCEDURE bench.complete_history(owner text DEFAULT 'bench-1') LANGUAGE plpgsql AS $$
DECLARE r record; written int; missed text[]; released int;
BEGIN
  FOR r IN SELECT ids, tokens FROM pg_temp.claimed_batches LOOP
    WITH d AS (
      DELETE FROM jobvisor.jobs AS j
       WHERE j.id = ANY (r.ids) AND j.status = 'running' AND j.locked_by = owner
         AND j.lease_token = ANY (r.tokens)
      RETURNING j.*
    ), u AS (
      INSERT INTO jobvisor.jobs_history
        (id, queue, kind, payload, status, priority, attempts, max_attempts, run_at, locked_by, locked_until,
         last_error, errors, unique_key, created_at, started_at, finished_at, lease_token, concurrency_key,
         result, progress, snoozes, trace_context, parents_waiting, on_parent_failure, has_dependents)
      SELECT d.id, d.queue, d.kind, d.payload, 'done', d.priority, d.attempts, d.max_attempts, d.run_at, d.locked_by, NULL,
             d.last_error, d.errors, d.unique_key, d.created_at, d.started_at, now(), d.lease_token, d.concurrency_key,
             NULL, d.progress, d.snoozes, d.trace_context, d.parents_waiting, d.on_parent_failure, d.has_dependents
        FROM d
      RETURNING id, has_dependents
    )
    SELECT count(*)::int, CASE WHEN count(*) < cardinality(r.ids) THEN array_agg(id)::text[] END,
           jobvisor.settle_parents(array_agg(id) FILTER (WHERE has_dependents))
      INTO written, missed, released
      FROM u;
    IF written <> cardinality(r.ids) THEN RAISE EXCEPTION 'done wrote % of %', written, cardinality(r.ids); END IF;
    COMMIT;
  END LOOP;
END $$;

-- Each layout's database: a copy of the template, plus its own DDL below.
\connect postgres
DROP DATABASE IF EXISTS stl_today WITH (FORCE);
DROP DATABASE IF EXISTS stl_delete WITH (FORCE);
DROP DATABASE IF EXISTS stl_partitioned WITH (FORCE);
DROP DATABASE IF EXISTS stl_history WITH (FORCE);
CREATE DATABASE stl_today TEMPLATE stl_template;
CREATE DATABASE stl_delete TEMPLATE stl_template;
CREATE DATABASE stl_partitioned TEMPLATE stl_template;
CREATE DATABASE stl_history TEMPLATE stl_template;

------------------------------------------------------------------------------
-- 1. today
\connect stl_today
\echo layout today
\set complete 'CALL bench.complete_update()'
\set analyzed 'jobvisor.jobs'
\set remove 'CALL bench.cleanup()'
\ir storage-layouts-phases.sql

------------------------------------------------------------------------------
-- 2. delete at completion
\connect stl_delete
\echo layout delete
\set complete 'CALL bench.complete_delete()'
\set analyzed 'jobvisor.jobs'
\set remove 'SELECT 1'
\ir storage-layouts-phases.sql

------------------------------------------------------------------------------
-- 3. partitioned by status
\connect stl_partitioned
\echo layout partitioned
ALTER TABLE jobvisor.jobs RENAME TO jobs_unpartitioned;
CREATE TABLE jobvisor.jobs (LIKE jobvisor.jobs_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY INCLUDING STORAGE)
  PARTITION BY LIST (status);
DROP TABLE jobvisor.jobs_unpartitioned;
CREATE TABLE jobvisor.jobs_live PARTITION OF jobvisor.jobs FOR VALUES IN ('pending', 'running', 'blocked', 'failed')
  WITH (fillfactor = 50, autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE TABLE jobvisor.jobs_finished PARTITION OF jobvisor.jobs FOR VALUES IN ('done', 'cancelled')
  WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
-- jobs_pkey and jobs_unique_key_idx cannot be declared on the parent (they lack
-- the partition key); on jobs_live they are unique within the partition only.
ALTER TABLE jobvisor.jobs_live ADD CONSTRAINT jobs_live_pkey PRIMARY KEY (id);
CREATE UNIQUE INDEX jobs_live_unique_key_idx ON jobvisor.jobs_live (kind, unique_key) WHERE unique_key IS NOT NULL;
CREATE INDEX jobs_live_pending_idx ON jobvisor.jobs_live (queue, priority, run_at, id) WHERE status = 'pending';
CREATE INDEX jobs_live_pending_key_idx ON jobvisor.jobs_live (queue, concurrency_key, priority, run_at, id)
  WHERE status = 'pending' AND concurrency_key IS NOT NULL;
CREATE INDEX jobs_live_running_idx ON jobvisor.jobs_live (id) WHERE status = 'running';
CREATE INDEX jobs_live_running_key_idx ON jobvisor.jobs_live (queue, concurrency_key)
  WHERE status = 'running' AND concurrency_key IS NOT NULL;
CREATE INDEX jobs_live_blocked_idx ON jobvisor.jobs_live (queue, kind) WHERE status = 'blocked';
CREATE INDEX jobs_live_failed_idx ON jobvisor.jobs_live (kind, id) WHERE status = 'failed';
CREATE INDEX jobs_live_failed_finished_idx ON jobvisor.jobs_live (finished_at) WHERE status = 'failed';
CREATE INDEX jobs_finished_id_idx ON jobvisor.jobs_finished (id);
CREATE INDEX jobs_finished_finished_at_idx ON jobvisor.jobs_finished (finished_at);
CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobvisor.jobs REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION jobvisor.notify_inserted();
CREATE TRIGGER jobs_notify_requeue AFTER UPDATE OF status ON jobvisor.jobs
  FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status IS DISTINCT FROM 'pending')
  EXECUTE FUNCTION jobvisor.notify_requeued();
\set complete 'CALL bench.complete_update()'
\set analyzed 'jobvisor.jobs'
\set remove 'TRUNCATE jobvisor.jobs_finished'
\ir storage-layouts-phases.sql

------------------------------------------------------------------------------
-- 4. history table
\connect stl_history
\echo layout history
CREATE TABLE jobvisor.jobs_history (LIKE jobvisor.jobs INCLUDING DEFAULTS)
  WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX jobs_history_id_idx ON jobvisor.jobs_history (id);
CREATE INDEX jobs_history_finished_at_idx ON jobvisor.jobs_history (finished_at);
\set complete 'CALL bench.complete_history()'
\set analyzed 'jobvisor.jobs, jobvisor.jobs_history'
\set remove 'TRUNCATE jobvisor.jobs_history'
\ir storage-layouts-phases.sql

------------------------------------------------------------------------------
-- Report: this run, then the medians of every kept run with the same setup.
\connect postgres
DROP DATABASE stl_template;
\connect stl_results
\set QUIET off
\echo
\echo this run (ms; WAL bytes per job; fpi = share of the WAL that is full-page images; sizes after the phase, MB)
SELECT r.layout, r.phase, round(r.ms::numeric, 1) AS ms, round(r.wal_bytes / u.jobs, 1) AS wal_per_job,
       round(100 * r.fpi_bytes / nullif(r.wal_bytes, 0), 1) AS fpi_pct, r.wal_records,
       r.checkpoint_inside AS ckpt_inside,
       round(r.table_bytes / 1048576.0, 2) AS table_mb, round(r.index_bytes / 1048576.0, 2) AS index_mb
  FROM results AS r JOIN runs AS u USING (run)
 WHERE r.run = :run
 ORDER BY array_position(ARRAY['today', 'delete', 'partitioned', 'history'], r.layout),
          array_position(ARRAY['enqueue', 'claim', 'complete', 'remove', 'vacuum'], r.phase);

\echo medians over the kept runs with the same jobs and checkpoint setting
SELECT r.layout, r.phase, count(*) AS runs,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.ms)::numeric, 1) AS ms,
       round(min(r.ms)::numeric, 1) AS min_ms, round(max(r.ms)::numeric, 1) AS max_ms,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.wal_bytes / u.jobs)::numeric, 1) AS wal_per_job,
       round(min(r.wal_bytes / u.jobs), 1) AS min_wal, round(max(r.wal_bytes / u.jobs), 1) AS max_wal,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY 100 * r.fpi_bytes / nullif(r.wal_bytes, 0))::numeric, 1) AS fpi_pct,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.table_bytes)::numeric / 1048576, 2) AS table_mb,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.index_bytes)::numeric / 1048576, 2) AS index_mb,
       bool_or(r.checkpoint_inside) AS any_ckpt_inside
  FROM results AS r JOIN runs AS u USING (run)
 WHERE u.jobs = :jobs AND u.checkpointed = :'checkpoint'::boolean
 GROUP BY r.layout, r.phase
 ORDER BY array_position(ARRAY['today', 'delete', 'partitioned', 'history'], r.layout),
          array_position(ARRAY['enqueue', 'claim', 'complete', 'remove', 'vacuum'], r.phase);

\echo whole life cycle per job, medians of the per-run sums (with and without the vacuum)
SELECT t.layout, count(*) AS runs,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms)::numeric, 1) AS ms,
       round(min(t.ms)::numeric, 1) AS min_ms, round(max(t.ms)::numeric, 1) AS max_ms,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms * 1000 / t.jobs)::numeric, 2) AS us_per_job,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.wal / t.jobs)::numeric, 1) AS wal_per_job,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY 100 * t.fpi / t.wal)::numeric, 1) AS fpi_pct,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms_nv * 1000 / t.jobs)::numeric, 2) AS us_per_job_no_vacuum,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.wal_nv / t.jobs)::numeric, 1) AS wal_per_job_no_vacuum
  FROM (SELECT r.run, r.layout, u.jobs, sum(r.ms) AS ms, sum(r.wal_bytes) AS wal, sum(r.fpi_bytes) AS fpi,
               sum(r.ms) FILTER (WHERE r.phase <> 'vacuum') AS ms_nv,
               sum(r.wal_bytes) FILTER (WHERE r.phase <> 'vacuum') AS wal_nv
          FROM results AS r JOIN runs AS u USING (run)
         WHERE u.jobs = :jobs AND u.checkpointed = :'checkpoint'::boolean
         GROUP BY r.run, r.layout, u.jobs) AS t
 GROUP BY t.layout
 ORDER BY array_position(ARRAY['today', 'delete', 'partitioned', 'history'], t.layout);
