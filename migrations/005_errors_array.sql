-- The per-attempt error history must be a JSON array.
--
-- A row written by plain SQL with `errors = '{}'` (an easy slip for people used
-- to PostgreSQL array literals), a JSON string or a JSON null made
-- append_error throw `cannot get array length of a non-array`. Every failure
-- write and every reaper round that touched that one row then failed as a
-- whole: the completer retried the batch forever and the reaper stopped
-- returning crashed supervisors' jobs cluster-wide.
--
-- Both layers are fixed, on purpose:
--   * the schema refuses a non-array from now on (jobs_errors_check), so a
--     producer in any language gets a clear error at its INSERT;
--   * append_error treats a non-array as an empty history, so a database where
--     the constraint was dropped, or a row from a restored dump, still cannot
--     stop failure writes or the reaper.
--
-- Existing bad rows are repaired first (one UPDATE; the old value is kept,
-- truncated, as the first history entry so nothing is silently lost). The
-- constraint is then added NOT VALID and validated. On its own, the brief
-- ACCESS EXCLUSIVE lock would cover only the catalog change and the scan would
-- run under SHARE UPDATE EXCLUSIVE, letting enqueues and claims go on; but
-- `jobvisor migrate` runs every pending migration in one transaction, so the
-- ACCESS EXCLUSIVE lock is still held during the scan (README: what a
-- migration locks).

CREATE OR REPLACE FUNCTION jobvisor.append_error(errors jsonb, attempt integer, at timestamptz, error text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT (CASE WHEN jsonb_typeof(errors) IS DISTINCT FROM 'array' THEN '[]'::jsonb
               WHEN jsonb_array_length(errors) >= 20 THEN errors - 0
               ELSE errors END)
         || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', at, 'error', error))
$$;

UPDATE jobvisor.jobs
   SET errors = jsonb_build_array(jsonb_build_object(
         'attempt', attempts, 'at', now(),
         'error', 'errors was not a JSON array and was replaced; it held: ' || left(errors::text, 500)))
 WHERE jsonb_typeof(errors) <> 'array';

ALTER TABLE jobvisor.jobs
  ADD CONSTRAINT jobs_errors_check CHECK (jsonb_typeof(errors) = 'array') NOT VALID;
ALTER TABLE jobvisor.jobs VALIDATE CONSTRAINT jobs_errors_check;
