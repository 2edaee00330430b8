-- finished_minutes summed per quarter of an hour, for the day chart of the
-- dashboard's Overview (96 buckets of 15 minutes): a render then reads at most
-- 96 rows per queue and kind, where summing the day's minutes read 1,440. With
-- 20 M finished rows kept, those minutes made the day chart 1.5× the read of an
-- empty history on the same server.
--
-- A trigger on finished_minutes keeps every quarter equal to the sum of its
-- minutes, whoever writes them: the rollup of this version or of the one
-- before it (a rolling deploy), cleanup's delete of old minutes, a TRUNCATE.
-- So the invariant of finished_minutes (every finished row before the
-- watermark counted once, none from it on) holds here too, and a reader that
-- reads the watermark and the quarters in one statement counts every row once.
--
-- New table, a trigger and a copy of finished_minutes (a few thousand rows):
-- CREATE TRIGGER holds finished_minutes against writes until the migration
-- commits (the rollup waits; enqueues and claims never touch these tables).
-- No lock on jobvisor.jobs.
CREATE TABLE jobvisor.finished_quarters (
  quarter    timestamptz NOT NULL,               -- start of the quarter (minute binned by 15 minutes from the epoch)
  queue      text        NOT NULL,
  kind       text        NOT NULL,
  done       integer     NOT NULL DEFAULT 0,
  failed     integer     NOT NULL DEFAULT 0,
  cancelled  integer     NOT NULL DEFAULT 0,
  PRIMARY KEY (quarter, queue, kind)
);

CREATE FUNCTION jobvisor.finished_quarters_add(
  at timestamptz, q text, k text, d integer, f integer, c integer
) RETURNS void LANGUAGE sql AS $$
  INSERT INTO jobvisor.finished_quarters AS s (quarter, queue, kind, done, failed, cancelled)
  VALUES (date_bin('15 minutes', at, timestamptz '1970-01-01 00:00:00+00'), q, k, d, f, c)
  ON CONFLICT (quarter, queue, kind) DO UPDATE
     SET done = s.done + excluded.done, failed = s.failed + excluded.failed, cancelled = s.cancelled + excluded.cancelled
$$;

CREATE FUNCTION jobvisor.finished_minutes_to_quarters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM jobvisor.finished_quarters;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM jobvisor.finished_quarters_add(OLD.minute, OLD.queue, OLD.kind, -OLD.done, -OLD.failed, -OLD.cancelled);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM jobvisor.finished_quarters_add(NEW.minute, NEW.queue, NEW.kind, NEW.done, NEW.failed, NEW.cancelled);
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    -- A quarter whose minutes are all gone (cleanup deletes minutes after two days) goes too.
    DELETE FROM jobvisor.finished_quarters
     WHERE quarter = date_bin('15 minutes', OLD.minute, timestamptz '1970-01-01 00:00:00+00')
       AND queue = OLD.queue AND kind = OLD.kind AND done = 0 AND failed = 0 AND cancelled = 0;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER finished_minutes_to_quarters
  AFTER INSERT OR UPDATE OR DELETE ON jobvisor.finished_minutes
  FOR EACH ROW EXECUTE FUNCTION jobvisor.finished_minutes_to_quarters();

CREATE TRIGGER finished_minutes_truncated
  AFTER TRUNCATE ON jobvisor.finished_minutes
  FOR EACH STATEMENT EXECUTE FUNCTION jobvisor.finished_minutes_to_quarters();

INSERT INTO jobvisor.finished_quarters (quarter, queue, kind, done, failed, cancelled)
SELECT date_bin('15 minutes', minute, timestamptz '1970-01-01 00:00:00+00'), queue, kind,
       sum(done), sum(failed), sum(cancelled)
  FROM jobvisor.finished_minutes
 GROUP BY 1, 2, 3;
