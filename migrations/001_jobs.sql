-- The jobs table: every column of the classic design, plus what leases, fencing,
-- priorities and reporting need. Plain SQL from any language keeps working:
--   INSERT INTO jobvisor.jobs (kind, payload) VALUES ('welcome_email', '{"user_id":1}');
--   UPDATE jobvisor.jobs SET status = 'pending', attempts = 0 WHERE id = 42;

CREATE SCHEMA IF NOT EXISTS jobvisor;

CREATE TABLE jobvisor.jobs (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue         text        NOT NULL DEFAULT 'default',
  kind          text        NOT NULL,
  payload       jsonb       NOT NULL DEFAULT '{}',
  status        text        NOT NULL DEFAULT 'pending',
  priority      integer     NOT NULL DEFAULT 0,     -- lower runs first
  attempts      integer     NOT NULL DEFAULT 0,     -- attempts started so far
  max_attempts  integer     NOT NULL DEFAULT 8,
  run_at        timestamptz NOT NULL DEFAULT now(), -- not before this time
  locked_by     text,                               -- owner of the latest attempt (kept after it ends)
  locked_until  timestamptz,                        -- lease end while running
  last_error    text,
  errors        jsonb       NOT NULL DEFAULT '[]',  -- per-attempt history: [{attempt, at, error}]
  unique_key    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,                        -- start of the latest attempt
  finished_at   timestamptz,                        -- when it became done, failed or cancelled
  CONSTRAINT jobs_status_check CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled')),
  CONSTRAINT jobs_kind_check CHECK (char_length(kind) BETWEEN 1 AND 200),
  CONSTRAINT jobs_queue_check CHECK (char_length(queue) BETWEEN 1 AND 200),
  CONSTRAINT jobs_unique_key_check CHECK (char_length(unique_key) <= 1000),
  CONSTRAINT jobs_attempts_check CHECK (attempts >= 0),
  CONSTRAINT jobs_max_attempts_check CHECK (max_attempts >= 1)
);

-- The hot index: only pending rows, in claim order. Done rows never enter it, so
-- a table full of history claims as fast as an empty one.
CREATE INDEX jobs_pending_idx ON jobvisor.jobs (queue, priority, run_at, id) WHERE status = 'pending';

-- The reaper's index: running rows are few (one per job in flight). It does not
-- include locked_until, so heartbeats that only move the lease stay HOT updates.
CREATE INDEX jobs_running_idx ON jobvisor.jobs (id) WHERE status = 'running';

-- Dead letters, for `jobs retry --failed`, metrics and alerts.
CREATE INDEX jobs_failed_idx ON jobvisor.jobs (kind, id) WHERE status = 'failed';

-- Cleanup walks finished rows oldest first.
CREATE INDEX jobs_finished_idx ON jobvisor.jobs (finished_at) WHERE status IN ('done', 'cancelled', 'failed');

-- De-duplication: one row per (kind, unique_key) while the row exists.
CREATE UNIQUE INDEX jobs_unique_key_idx ON jobvisor.jobs (kind, unique_key) WHERE unique_key IS NOT NULL;

-- One entry of the per-attempt error history; the newest 20 are kept.
CREATE FUNCTION jobvisor.append_error(errors jsonb, attempt integer, at timestamptz, error text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT (CASE WHEN jsonb_array_length(errors) >= 20 THEN errors - 0 ELSE errors END)
         || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', at, 'error', error))
$$;

-- Wake supervisors from the database itself, so a plain INSERT or a re-queue by
-- UPDATE wakes them too. One NOTIFY per statement, not per row: a bulk insert of
-- 20,000 jobs sends one message. PostgreSQL folds identical notifications within
-- a transaction, so many statements in one transaction still deliver one.
CREATE FUNCTION jobvisor.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('jobvisor_jobs', '');
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_notify_insert
  AFTER INSERT ON jobvisor.jobs
  FOR EACH STATEMENT EXECUTE FUNCTION jobvisor.notify_jobs();

-- Re-queues (a dead letter set back to pending, or a retry) notify once per row
-- that becomes pending; claims and completions never match the WHEN clause, so
-- the hot path pays nothing.
CREATE TRIGGER jobs_notify_requeue
  AFTER UPDATE OF status ON jobvisor.jobs
  FOR EACH ROW WHEN (NEW.status = 'pending' AND OLD.status IS DISTINCT FROM 'pending')
  EXECUTE FUNCTION jobvisor.notify_jobs();
