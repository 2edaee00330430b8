-- Waits and signals: ctx.waitFor(name, { timeout }) parks a job until a signal
-- of that name is sent to it (signal(db, jobId, name, payload), `jobvisor jobs
-- signal`, the dashboard, or plain SQL: SELECT jobvisor.signal(42, 'approved',
-- '{"by": "ann"}')) or its timeout passes.
--
-- A parked job is `waiting`: not pending (no claim reads it: every claim
-- walks `status = 'pending'` only), not running (it holds no lease, no thread
-- and no slot of a limited queue: those count running rows), not finished (a
-- workflow child of it stays blocked; cleanup keeps it). `waiting_for` names
-- the signal it waits for and `run_at` is its timeout deadline. It leaves
-- `waiting` once, to `pending`, by whichever comes first:
--   * jobvisor.signal() of that name (below), in the signal's transaction;
--   * the reaper's round, once run_at has passed (src/queue/wait.ts);
--   * an operator (`jobs run-now`: the wait times out now; cancel; delete).
-- Each of those changes the row only while it is still `waiting`, under the
-- row's lock, so two of them racing resume the job once. The run that follows
-- decides what waitFor returns, in one fenced statement (src/queue/steps.ts):
-- the signal when one has committed, else the timeout, and records it, so
-- every later run returns the same.
--
-- No lost wake-up. A signal sent before the job reaches waitFor is kept in
-- job_signals and taken there. The two writers that could miss each other
-- both lock the job's row first and only then read the other's table, each in
-- a statement of its own (a PL/pgSQL statement takes a fresh snapshot):
--   * park_waits() (the completer parking runs) locks the running rows, then
--     looks for a signal of the name: found, the job goes back to pending at
--     once instead of waiting;
--   * signal() locks the job's row, then inserts the signal and wakes the job
--     if it waits for that name.
-- Whichever locks second waits for the first to commit and then sees its
-- write. A single statement would not: its snapshot is taken before it waits
-- for the lock.
--
-- Status constraint: re-added NOT VALID, like 017 (every row passed the
-- narrower one). New columns are nullable without defaults; the index is new:
-- CREATE INDEX takes SHARE on jobvisor.jobs while it builds (enqueues and
-- completions wait; waiting rows are none yet, but the build still reads the
-- table once).

ALTER TABLE jobvisor.jobs
  DROP CONSTRAINT jobs_status_check,
  ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled', 'blocked', 'waiting')) NOT VALID;

ALTER TABLE jobvisor.jobs ADD COLUMN waiting_for text;

-- Waiting jobs by deadline: the reaper's timeout pass walks it from the
-- oldest deadline, and the counts by queue and kind (stats, gauges, the
-- overview) read it index-only. Plain jobs never enter it.
CREATE INDEX jobs_waiting_idx ON jobvisor.jobs (run_at, queue, kind) WHERE status = 'waiting';

-- Signals sent to jobs, one per (job, name): the first one sent wins and a
-- repeat is ignored ('duplicate'), so a sender that retries (a webhook
-- delivered twice) cannot change what a wait received. Kept until the job is
-- deleted (with jobs.has_steps, like job_steps). The payload is small: at most
-- 64 KiB of JSON.
CREATE TABLE jobvisor.job_signals (
  job_id   bigint      NOT NULL,
  name     text        NOT NULL,
  payload  jsonb,
  sent_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, name),
  CONSTRAINT job_signals_name_check CHECK (char_length(name) BETWEEN 1 AND 200),
  CONSTRAINT job_signals_payload_check CHECK (payload IS NULL OR octet_length(payload::text) <= 65536)
);

-- Sends signal `signal_name` with `payload` to job `job`, and returns what
-- became of it:
--   'woke'       the job was waiting for it: now pending and due at once;
--   'kept'       stored for the job's waitFor of that name, when it gets there;
--   'duplicate'  a signal of that name was sent to the job before: ignored;
--   'late'       the job's wait of that name has already timed out: ignored;
--   'ignored'    the job is finished or missing and `ignore_finished` is set.
-- A job that is done, failed (dead letter) or cancelled, or does not exist,
-- raises SQLSTATE JV002 or JV001 (a signal to it could never be read), unless
-- `ignore_finished`. Runs in the caller's transaction: the signal and its wake
-- commit, or roll back, with it.
CREATE FUNCTION jobvisor.signal(job bigint, signal_name text, payload jsonb DEFAULT NULL,
                                ignore_finished boolean DEFAULT false)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  st text;
  wf text;
  flagged boolean;
BEGIN
  IF signal_name IS NULL OR char_length(signal_name) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'jobvisor.signal: the signal name must be 1 to 200 characters' USING ERRCODE = '22023';
  END IF;
  SELECT j.status, j.waiting_for, j.has_steps INTO st, wf, flagged
    FROM jobvisor.jobs AS j WHERE j.id = job FOR NO KEY UPDATE;
  IF NOT FOUND OR st IN ('done', 'failed', 'cancelled') THEN
    IF ignore_finished THEN
      RETURN 'ignored';
    ELSIF NOT FOUND THEN
      RAISE EXCEPTION 'jobvisor.signal: job % does not exist (or was deleted)', job USING ERRCODE = 'JV001';
    ELSE
      RAISE EXCEPTION 'jobvisor.signal: job % is %, so no wait of it can receive signal "%"', job, st, signal_name
        USING ERRCODE = 'JV002';
    END IF;
  END IF;
  -- From here the row is locked: this statement's snapshot is fresh.
  IF EXISTS (SELECT 1 FROM jobvisor.job_signals AS s WHERE s.job_id = job AND s.name = signal_name) THEN
    RETURN 'duplicate';
  END IF;
  IF EXISTS (SELECT 1 FROM jobvisor.job_steps AS w
              WHERE w.job_id = job AND w.name = signal_name AND w.kind = 'wait' AND w.finished_at IS NOT NULL) THEN
    RETURN 'late';
  END IF;
  INSERT INTO jobvisor.job_signals (job_id, name, payload) VALUES (job, signal_name, payload);
  IF st = 'waiting' AND wf = signal_name THEN
    -- pending: the re-queue trigger (migration 003) notifies the job's queue.
    UPDATE jobvisor.jobs SET status = 'pending', run_at = now(), waiting_for = NULL, has_steps = true
     WHERE id = job;
    RETURN 'woke';
  END IF;
  IF flagged IS NULL THEN
    UPDATE jobvisor.jobs SET has_steps = true WHERE id = job;
  END IF;
  RETURN 'kept';
END $$;

-- Parks the runs ids[i] (claimed with tokens[i] by `owner`) that called
-- waitFor(names[i]): each waits until untils[i], or for delays_ms[i] from now
-- when untils[i] is NULL (a wait reached for the first time), its attempt
-- given back like a snooze's. A run whose job already has a signal of that
-- name is made pending at once instead (see the header). Fenced like every
-- write after a claim: a run no longer holding its claim changes nothing.
-- The wait's record (job_steps, kind 'wait') keeps the deadline of the first
-- park: a run that parks again on the same wait keeps it.
-- Returns each row written: its id, new status and deadline.
CREATE FUNCTION jobvisor.park_waits(ids bigint[], tokens bigint[], owner text, names text[],
                                    untils timestamptz[], delays_ms float8[], at timestamptz)
RETURNS TABLE (job_id bigint, status text, deadline timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  t timestamptz := coalesce(at, now());
BEGIN
  PERFORM 1 FROM jobvisor.jobs AS j
   WHERE j.id = ANY (ids) AND j.status = 'running' AND j.locked_by = owner AND j.lease_token = ANY (tokens)
   ORDER BY j.id
     FOR NO KEY UPDATE;
  RETURN QUERY
  WITH p AS (
    SELECT j.id, i.name, coalesce(i.until, t + i.delay * interval '1 millisecond') AS deadline,
           EXISTS (SELECT 1 FROM jobvisor.job_signals AS s WHERE s.job_id = j.id AND s.name = i.name) AS signalled
      FROM unnest(tokens, names, untils, delays_ms) AS i(token, name, until, delay)
      JOIN jobvisor.jobs AS j ON j.lease_token = i.token
     WHERE j.id = ANY (ids) AND j.status = 'running' AND j.locked_by = owner
  ), u AS (
    UPDATE jobvisor.jobs AS j
       SET status = CASE WHEN p.signalled THEN 'pending' ELSE 'waiting' END,
           waiting_for = CASE WHEN p.signalled THEN NULL ELSE p.name END,
           run_at = CASE WHEN p.signalled THEN t ELSE p.deadline END,
           attempts = greatest(j.attempts - 1, 0),
           locked_until = NULL,
           has_steps = true
      FROM p
     WHERE j.id = p.id
    RETURNING j.id, j.status, p.name, p.deadline, j.attempts + 1 AS attempt
  ), w AS (
    INSERT INTO jobvisor.job_steps (job_id, name, kind, attempt, started_at, wake_at)
    SELECT u.id, u.name, 'wait', u.attempt, t, u.deadline FROM u
    ON CONFLICT (job_id, name) DO NOTHING
  )
  SELECT u.id, u.status, u.deadline FROM u;
END $$;

-- A waiting job has not finished: a workflow parent stays while such a
-- dependent may still read it (017's has_live_dependents, with `waiting`).
CREATE OR REPLACE FUNCTION jobvisor.has_live_dependents(parent bigint) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM jobvisor.job_dependencies AS d JOIN jobvisor.jobs AS c ON c.id = d.child_id
                  WHERE d.parent_id = parent AND c.status IN ('blocked', 'pending', 'running', 'waiting'));
END $$;
