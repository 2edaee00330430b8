-- Durable steps and sleeps: what a task recorded with ctx.step(name, fn) and
-- ctx.sleep(name, …), so that a later run of the same job (a retry, a run
-- after a crash, a sleep, a signal, a shutdown hand-back) returns a finished
-- step's result without calling its fn again, and a sleep whose time has
-- passed returns at once.
--
-- One row per (job, name): a name is unique within a job, whatever it names
-- (a step, a sleep, or a wait of migration 028).
--   kind         'step' | 'sleep' | 'wait'
--   result       a step: fn's value as JSON (NULL: fn returned undefined);
--                a wait: {"received": true, "payload": …} or {"received": false};
--                a sleep: NULL
--   attempt      the job's attempt that recorded it
--   started_at   a step: when fn started (the statement's time less fn's
--                duration as the thread measured it); a sleep or wait: when
--                the task first reached it
--   finished_at  a step: when its record was written; a wait: when it was
--                decided; a sleep: NULL (it is over once wake_at has passed)
--   wake_at      a sleep: its wake time; a wait: its timeout deadline
--
-- Writes. A step's record is written by the worker thread that ran fn, in
-- one statement that locks the job's row FOR SHARE while it checks that the
-- row is still `running` under the run's lease_token (src/queue/steps.ts):
-- the reaper's re-claim, a cancel or a completion takes a stronger lock, so
-- none can change the row between the check and the insert, and a run whose
-- claim was taken away records nothing. FOR SHARE and not a row update: an
-- update would give the running row a new version per step. A sleep's record
-- is written with the job's own fenced write back to pending (the completer,
-- src/queue/sleep.ts).
--
-- Reads. A run loads its job's records once, on the first ctx.step, sleep or
-- waitFor, through the primary key; a job that never calls them never reads
-- this table.
--
-- Deletes. The rows go with their job: cleanup, `jobs delete` and
-- `cleanup.retention 0` delete them with it. No foreign key: ON DELETE CASCADE
-- is a trigger on every delete from jobs, and plain jobs would pay for it in
-- the hot completion of keep-none. Instead `jobs.has_steps` (NULL for a job
-- that never recorded a step, a sleep, a wait or a signal) says which deleted
-- rows have any; the statements that delete jobs (cleanup, `jobs delete`, the
-- keep-none completion) delete theirs in the same statement, reading
-- job_steps only for the rows so flagged.
--
-- Sizes. jobs.maxSteps caps the rows of one job and jobs.maxStepResultBytes a
-- step's result; both are checked in the thread before anything is written.
-- The CHECKs below are the last line for rows written by plain SQL.
--
-- New table and a nullable column without a default: catalog-only changes on
-- jobvisor.jobs, no rewrite, no scan.
CREATE TABLE jobvisor.job_steps (
  job_id      bigint      NOT NULL,
  name        text        NOT NULL,
  kind        text        NOT NULL DEFAULT 'step',
  result      jsonb,
  attempt     integer     NOT NULL DEFAULT 0,
  started_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  wake_at     timestamptz,
  PRIMARY KEY (job_id, name),
  CONSTRAINT job_steps_name_check CHECK (char_length(name) BETWEEN 1 AND 200),
  CONSTRAINT job_steps_kind_check CHECK (kind IN ('step', 'sleep', 'wait'))
);

-- Every row is written once and then read by its key; no page is hot.
ALTER TABLE jobvisor.job_steps SET (fillfactor = 100);

ALTER TABLE jobvisor.jobs ADD COLUMN has_steps boolean;
