-- What a running task reports back.
--
--   result   the task's return value as JSON (NULL when it returned nothing),
--            written with the fenced `done` write of the run that succeeded;
--   progress the last value the task gave ctx.progress(), written at most once
--            a second per job, fenced like every write after a claim;
--   snoozes  how many times the job was put back by ctx.snooze() or a
--            SnoozeError. A snooze gives the claim's attempt back, so this is
--            the only count of them; past jobs.maxSnoozes the job is
--            dead-lettered instead.
--
-- Nullable columns without a default and a NOT NULL column with a constant
-- default are catalog-only changes (no table rewrite, no long lock). The CHECKs
-- are NOT VALID so adding them scans nothing; new rows are still checked.
ALTER TABLE jobvisor.jobs ADD COLUMN result jsonb;
ALTER TABLE jobvisor.jobs ADD COLUMN progress jsonb;
ALTER TABLE jobvisor.jobs ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
ALTER TABLE jobvisor.jobs
  ADD CONSTRAINT jobs_snoozes_check CHECK (snoozes >= 0) NOT VALID;

-- A snooze in the job's history (the `errors` array, which `jobs show` reads as
-- the job's timeline): {"attempt", "at", "snooze": true, "until"}. It has no
-- "error" key: a snooze is not a failure. The history keeps 20 entries, like
-- append_error; when full, the oldest SNOOZE goes first, so a job that snoozes
-- a hundred times keeps the failures that explain it.
CREATE FUNCTION jobvisor.append_snooze(errors jsonb, attempt integer, at timestamptz, until timestamptz)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT (CASE WHEN jsonb_array_length(h.e) < 20 THEN h.e
               ELSE h.e - coalesce((SELECT min(x.i)::int - 1
                                      FROM jsonb_array_elements(h.e) WITH ORDINALITY AS x(v, i)
                                     WHERE x.v @> '{"snooze": true}'), 0) END)
         || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', at, 'snooze', true, 'until', until))
    FROM (SELECT CASE WHEN jsonb_typeof(errors) IS DISTINCT FROM 'array' THEN '[]'::jsonb ELSE errors END AS e) AS h
$$;
