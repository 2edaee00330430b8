-- Live supervisors, as each reports itself: the dashboard's and `jobvisor
-- stats`' answer to "who is running, and what is each doing?".
--
-- A supervisor upserts its row on every heartbeat (every lease/3; one tiny
-- statement per beat, none per job) and deletes it on a clean exit. A row
-- whose supervisor stopped beating (kill -9, lost host) expires at
-- expires_at (last beat + 3 leases): readers skip it from then on, and the
-- reaper deletes it. The id is the supervisor's owner id, the value it writes
-- to jobs.locked_by, so a job's owner can be looked up here.
CREATE TABLE jobvisor.supervisors (
  id            text        PRIMARY KEY,
  host          text        NOT NULL,
  pid           integer     NOT NULL,
  version       text        NOT NULL,
  queues        jsonb       NOT NULL DEFAULT '{}',  -- queue name -> concurrency
  started_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  in_flight     integer     NOT NULL DEFAULT 0       -- jobs held at the last beat
);

-- Cancelled jobs by finish time, for the dashboard's throughput chart: done
-- jobs per bucket are the finished ones (an index-only count on
-- jobs_finished_idx) less the dead letters (jobs_failed_idx, few) and the
-- cancelled ones (this index: cancellations are rare, so it is small and
-- costs nothing on the claim/complete path). With 1 M done rows over 3 days,
-- the last day's chart (335 k rows) took 690-830 ms when it read every row's
-- heap page for its status, 85 ms through index-only scans. Widening
-- jobs_finished_idx to (finished_at, status, queue) measured the same, but
-- made the planner pick sequential scans for hot statements on a table that
-- grew without ANALYZE (test/plans.test.ts failed 5 runs of 6), so it was not kept.
CREATE INDEX jobs_cancelled_idx ON jobvisor.jobs (finished_at) WHERE status = 'cancelled';
