-- Finished jobs counted per minute, queue and kind, for the dashboard's Overview
-- (the throughput charts and the done count of the last hour) and `jobvisor
-- stats` (done and cancelled of the last hour by queue and kind), so that what a
-- page reads follows the number of minutes shown, not the number of jobs that
-- finished in them. With 20 M finished rows kept over 3 days (77 jobs/s), the
-- day chart read 6.7 M entries of jobs_finished_idx per render; at 1,000 jobs/s
-- it would read 86 M.
--
-- The maintenance loop (src/queue/finished_rollup.ts, run by each cleanup
-- round before its deletes) counts the finished rows of whole minutes that
-- ended at least 10 s ago and moves the watermark `upto` past them, in the same
-- statement, under the watermark row's lock (FOR UPDATE SKIP LOCKED: two
-- supervisors never count a minute twice). Readers take the minutes before
-- `upto` from here and count the rows from `upto` on in jobs, as before.
--
-- The watermark starts one day back, so the charts keep the last day of rows
-- that finished before this migration: the first rollups count them.
-- New tables only: no lock on jobvisor.jobs.
CREATE TABLE jobvisor.finished_minutes (
  minute     timestamptz NOT NULL,               -- start of the minute (finished_at binned from the epoch)
  queue      text        NOT NULL,
  kind       text        NOT NULL,
  done       integer     NOT NULL DEFAULT 0,
  failed     integer     NOT NULL DEFAULT 0,     -- dead letters
  cancelled  integer     NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, queue, kind)
);

-- One row: every finished row with finished_at before `upto` is counted above.
CREATE TABLE jobvisor.finished_rollup (
  one   boolean     PRIMARY KEY DEFAULT true CHECK (one),
  upto  timestamptz NOT NULL
);

INSERT INTO jobvisor.finished_rollup (upto)
VALUES (date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00') - interval '1 day');
