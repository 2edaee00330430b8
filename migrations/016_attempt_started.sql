-- Each failed attempt's entry in the `errors` history also records when that
-- attempt started and which supervisor ran it, so the job page can show every
-- attempt's start, end, duration and owner (`started_at` and `locked_by` keep
-- only the latest attempt's):
--   {"attempt": 2, "at": "<end>", "error": "...", "started": "<start>", "owner": "host:pid:…"}
-- The completer wraps its append_error with this; entries written by the
-- reaper, the snooze path or supervisors of an older version have no such
-- keys, and readers show those as unknown. A NULL start adds nothing.
CREATE FUNCTION jobvisor.attempt_started(errors jsonb, started timestamptz, owner text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN started IS NULL OR jsonb_typeof(errors) IS DISTINCT FROM 'array' OR jsonb_array_length(errors) = 0
              THEN errors
              ELSE jsonb_set(errors, ARRAY[(jsonb_array_length(errors) - 1)::text],
                             (errors -> -1) || jsonb_strip_nulls(jsonb_build_object('started', started, 'owner', owner)))
         END
$$;
