-- The functions of migration 028 keep index plans, as those of 010 and 023 do.
--
-- PL/pgSQL keeps each statement's plan for the session, and after five runs
-- may keep a generic one. Made while jobs, job_steps and job_signals were
-- tiny, that plan is a sequential scan, kept once they have grown: parking
-- 100 waits read the whole jobs table, 3.4 s at a million rows
-- (test/plans/plans.test.ts). `enable_seqscan = off` while they run means
-- their plans use the indexes whatever the statistics were when made.
--
-- 028 also replaced has_live_dependents (CREATE OR REPLACE sets every
-- property anew) and so dropped what 023 had given it: VOLATILE, so that
-- `jobs delete` re-checking a row whose lock it waited for sees an edge
-- committed meanwhile, and the same `enable_seqscan = off`. Both come back.
--
-- ALTER FUNCTION changes the catalog only: no lock on jobvisor.jobs.
ALTER FUNCTION jobvisor.signal(bigint, text, jsonb, boolean) SET enable_seqscan = off;
ALTER FUNCTION jobvisor.park_waits(bigint[], bigint[], text, text[], timestamptz[], float8[], timestamptz)
  SET enable_seqscan = off;
ALTER FUNCTION jobvisor.has_live_dependents(bigint) VOLATILE SET enable_seqscan = off;
