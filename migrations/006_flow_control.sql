-- Flow control: paused queues, per-key concurrency and the rate limiter's
-- record of recent starts. Everything a limit counts is read from the jobs table
-- or from rows written in the claim's own transaction, so a crashed supervisor
-- cannot leak a slot: its running rows hold their slots until the reaper returns
-- them, and nothing else does.

-- One row per queue that was ever paused or resumed. Plain SQL works too:
--   UPDATE jobvisor.queues SET paused = true WHERE queue = 'mail';
-- and the trigger below tells every supervisor at once.
CREATE TABLE jobvisor.queues (
  queue       text        PRIMARY KEY,
  paused      boolean     NOT NULL DEFAULT false,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT queues_queue_check CHECK (char_length(queue) BETWEEN 1 AND 200)
);

-- Its own channel: a queue name may contain ':' so a prefix on jobvisor_jobs
-- could not be told from a queue. The payload is the queue.
CREATE FUNCTION jobvisor.notify_queue_state() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('jobvisor_queues', NEW.queue);
  RETURN NULL;
END $$;

CREATE TRIGGER queues_notify
  AFTER INSERT OR UPDATE ON jobvisor.queues
  FOR EACH ROW EXECUTE FUNCTION jobvisor.notify_queue_state();

-- The key of per-key limits. Adding a nullable column without a default is a
-- catalog-only change.
ALTER TABLE jobvisor.jobs ADD COLUMN concurrency_key text;
ALTER TABLE jobvisor.jobs ADD CONSTRAINT jobs_concurrency_key_check CHECK (char_length(concurrency_key) <= 1000);

-- A queue limited per key visits its keys one by one (a loose index scan), so
-- 10,000 pending jobs of one hot key cost one step, not 10,000 rows. Only rows
-- with a key enter these indexes: jobs without one (every job of a queue with
-- no per-key limit) pay nothing for them.
CREATE INDEX jobs_pending_key_idx ON jobvisor.jobs (queue, concurrency_key, priority, run_at, id)
  WHERE status = 'pending' AND concurrency_key IS NOT NULL;
CREATE INDEX jobs_running_key_idx ON jobvisor.jobs (queue, concurrency_key)
  WHERE status = 'running' AND concurrency_key IS NOT NULL;

-- Starts of jobs of rate-limited queues within the last period, written by the
-- claim that started them, under the queue's advisory lock, and pruned by the
-- next claim. `key` is '' for a queue-wide limit, else the job's concurrency key.
CREATE TABLE jobvisor.rate_starts (
  queue       text        NOT NULL,
  key         text        NOT NULL,
  started_at  timestamptz NOT NULL
);
CREATE INDEX rate_starts_key_idx ON jobvisor.rate_starts (queue, key, started_at);
CREATE INDEX rate_starts_age_idx ON jobvisor.rate_starts (queue, started_at);
