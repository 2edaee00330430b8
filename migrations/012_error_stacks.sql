-- Each failed attempt's stack is kept in the `errors` history, beside its
-- message: {"attempt": 3, "at": "...", "error": "Error: smtp said no",
-- "stack": "at send (file:///app/tasks/mail.js:12:11)\n..."}.
--
-- The stack holds frame lines only (the worker drops the `Name: message`
-- header, which `error` already records) and is bounded to 4 KiB by the
-- worker; last_error stays the one-line message. A new five-argument
-- append_error is added next to the four-argument one, which the reaper, the
-- snooze path and supervisors of an older version keep calling: an entry
-- without a stack is what it always was. A NULL stack adds no key.
CREATE FUNCTION jobvisor.append_error(errors jsonb, attempt integer, at timestamptz, error text, stack text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN stack IS NULL THEN e
              ELSE jsonb_set(e, ARRAY[(jsonb_array_length(e) - 1)::text, 'stack'], to_jsonb(stack)) END
    FROM (SELECT jobvisor.append_error(errors, attempt, at, error) AS e) AS appended
$$;
