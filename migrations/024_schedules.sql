-- When each schedule was first seen by a supervisor. The scheduler enqueues
-- the fire times a schedule missed while no supervisor ran it (up to
-- scheduler.catchUp back), never those before it existed: without this, a new
-- `*/5 * * * * *` schedule enqueued 720 jobs at its first start, one per five
-- seconds of the hour before it was written.
--
-- A row per definition, keyed by what decides the fire times (name, cron and
-- timezone; '' for UTC): a schedule whose cron changes is new from then on, so
-- the new expression is not back-filled either, and two versions of it seen
-- during a rolling deploy keep their own first sighting. Rows of schedules
-- since removed stay, one small row each, and are read by no one.
--
-- Written by each supervisor once at its scheduler's first round (an upsert
-- of its configured schedules that keeps an existing first_seen_at); no
-- statement on the claim or completion path reads it.
CREATE TABLE jobvisor.schedules (
  name          text        NOT NULL,
  cron          text        NOT NULL,
  timezone      text        NOT NULL DEFAULT '',
  first_seen_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (name, cron, timezone)
);
