-- The payload as the dashboard shows it: the value under every key named in
-- `keys` (lower case; compared case-insensitively, at any depth, inside arrays
-- too) replaced by "[redacted]", as src/dashboard/redact.ts does for display.
--
-- The dashboard's text filter (`q`) searches this projection, so a search
-- cannot match inside a redacted value: a list that says whether anything
-- matched would otherwise reveal a secret one prefix at a time. The filter
-- keeps the plain `payload::text ILIKE` in front of it (src/queue/admin/filter.ts):
-- a row can match the projection only if it matches the payload, so this
-- function runs only on rows the cheap test has already let through.
CREATE OR REPLACE FUNCTION jobvisor.redacted_payload(value jsonb, keys text[]) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  CASE jsonb_typeof(value)
    WHEN 'object' THEN
      RETURN coalesce(
        (SELECT jsonb_object_agg(e.key,
                  CASE WHEN lower(e.key) = ANY (keys) THEN '"[redacted]"'::jsonb
                       ELSE jobvisor.redacted_payload(e.value, keys) END)
           FROM jsonb_each(value) AS e),
        '{}'::jsonb);
    WHEN 'array' THEN
      RETURN coalesce(
        (SELECT jsonb_agg(jobvisor.redacted_payload(a.value, keys) ORDER BY a.n)
           FROM jsonb_array_elements(value) WITH ORDINALITY AS a(value, n)),
        '[]'::jsonb);
    ELSE
      RETURN value;
  END CASE;
END
$$;
