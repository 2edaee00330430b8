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
