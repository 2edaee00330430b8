-- A fence that no earlier run can hold.
--
-- Writes after a claim used to be fenced by (id, attempts). But `attempts` can
-- go backwards: `jobs retry` and the README's re-queue recipe set it to 0, so a
-- job cancelled while running and retried at once was claimed again as attempt
-- 1 -- the same fence as the cancelled run, which could then write the new
-- run's outcome. Every claim now draws a token from a sequence: it only grows,
-- whatever an operator or another producer does to the row, so a token belongs
-- to exactly one claim. Completions, failures, releases and lease renewals
-- change a row only while it still carries the token of the run that writes.
--
-- Adding a nullable column without a default is a catalog-only change (no
-- table rewrite); rows claimed before this migration have no token and are
-- reaped or re-claimed like any other. CACHE hands each backend 1,000 values
-- at a time, so a claim of 50 rows does not write the sequence 50 times.
CREATE SEQUENCE jobvisor.lease_token_seq AS bigint CACHE 1000;

ALTER TABLE jobvisor.jobs ADD COLUMN lease_token bigint;
