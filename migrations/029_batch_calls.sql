-- Batch tasks: the call a job last ran in.
--
--   batch_id  the id of the batch call that ran the job's latest attempt,
--             recorded when the call starts (src/queue/batch_call.ts): the
--             claim token of the call's first job, which names one claim of
--             one job and so one call. NULL for jobs of one-job tasks.
--
-- The dashboard's job page lists the other jobs of the same call through the
-- partial index below. Jobs of one-job tasks never enter it, and the heartbeat
-- (which moves only locked_until) stays a HOT update: batch_id changes once
-- per call, with the lease renewal that starts it.
--
-- A nullable column without a default is a catalog-only change; the index is
-- built on an empty set of rows (no job has a batch_id yet).
ALTER TABLE jobvisor.jobs ADD COLUMN batch_id bigint;
CREATE INDEX jobs_batch_idx ON jobvisor.jobs (batch_id) WHERE batch_id IS NOT NULL;
