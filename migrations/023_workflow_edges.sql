-- Workflows without long locks, and the edges of jobs that are gone.
--
-- 1. A child enqueued in an application's open transaction no longer locks its
--    existing parents until that transaction ends. It used to take them FOR NO
--    KEY UPDATE and set has_dependents at once, so a running parent's row
--    stayed locked for as long as the application kept its transaction open:
--    the heartbeat of the parent's supervisor (one UPDATE renewing all its
--    leases) waited on it, every lease of that supervisor ran out, and other
--    supervisors' reapers started all of its jobs again while they still ran.
--    Now the enqueue only reads its parents and records them in
--    jobvisor.new_edges; at COMMIT the deferred trigger below takes them for
--    the milliseconds of the commit. See settle_new_edges() for why that is
--    as safe as the lock it replaces.
-- 2. Cleanup keeps a parent while any dependent of it is kept, whatever the
--    dependent's status: a dead-lettered or cancelled child can be retried,
--    and it reads its parents again (has_kept_dependents).
-- 3. A child's edges to parents that no longer exist never hold it back: a
--    retry does not count them (reblock), and the safety net settles them
--    like a cancelled parent (settle_missing_parents).
--
-- Every function here runs with enable_seqscan off, as due_job_ids does
-- (migration 010): PL/pgSQL keeps a session's plans, and a generic plan made
-- while the table was tiny became a sequential scan once it had grown. Found
-- for settle_parents (migration 017), which gets the same setting: on a
-- million rows never analyzed, each of its statements read the table whole
-- (430-450 ms each; test/plans.test.ts).
--
-- Locks: none on jobvisor.jobs (a new table, new and replaced functions,
-- function settings).

-- One row per enqueue statement that named existing jobs as parents, written
-- in the enqueue's own transaction and deleted by the trigger at its COMMIT,
-- so the table is empty outside open transactions.
CREATE TABLE jobvisor.new_edges (
  id      bigint   GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  parents bigint[] NOT NULL
);

-- Runs at the COMMIT of the transaction that inserted `NEW` (a deferred
-- constraint trigger), after everything else it did. It takes the parents
-- FOR NO KEY UPDATE in id order (as the heartbeat, the reaper and the admin
-- actions take rows; the enqueue took the same locks before, for the whole
-- transaction: a deadlock with a done write in another order is no likelier,
-- and PostgreSQL breaks it: the supervisor retries its write, the COMMIT gets
-- 40P01), checks that they all still exist, flags them `has_dependents`, and
-- settles the new edges of those that have finished since the enqueue read
-- them.
--
-- Why this keeps the race with a parent's completion (or dead letter, reap,
-- cancel) closed, in READ COMMITTED (each statement below takes a fresh
-- snapshot once the lock is held):
--   - the completion committed before the enqueue read the parent: the edge
--     was inserted counted (or the child cancelled at once below);
--   - it committed after that read but before this lock: its settle_parents
--     could not see the uncommitted edge, and this function sees the parent
--     finished and settles the edge itself;
--   - it comes after this lock: its UPDATE waits until this transaction has
--     committed (milliseconds), then finds the row flagged and calls
--     settle_parents, whose fresh snapshot sees the committed edge.
-- A parent deleted meanwhile (keep-none completion, cleanup, `jobs delete`)
-- fails the COMMIT with SQLSTATE 23503, like a deferred foreign key, and
-- nothing is written. The flag is written even on a row flagged already:
-- a delete that waited for this lock then finds a newer row version and
-- re-checks its conditions on it (has_dependents for the keep-none
-- completion, has_kept_dependents for cleanup) instead of deleting a row
-- that only was locked.
-- In REPEATABLE READ or SERIALIZABLE the statements keep the transaction's
-- snapshot: a parent changed since (a running one changes at each heartbeat)
-- cannot be locked, and the COMMIT fails with 40001, to be retried.
CREATE FUNCTION jobvisor.settle_new_edges() RETURNS trigger
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  wanted bigint[];
  found bigint[];
  missing bigint[];
  finished bigint[];
BEGIN
  SELECT array_agg(DISTINCT p ORDER BY p) INTO wanted FROM unnest(NEW.parents) AS p;
  SELECT array_agg(id ORDER BY id) INTO found
    FROM (SELECT id FROM jobvisor.jobs WHERE id = ANY (wanted) ORDER BY id FOR NO KEY UPDATE) AS l;
  IF coalesce(cardinality(found), 0) < coalesce(cardinality(wanted), 0) THEN
    SELECT array_agg(p ORDER BY p) INTO missing FROM unnest(wanted) AS p WHERE p <> ALL (coalesce(found, '{}'));
    RAISE EXCEPTION 'jobvisor: dependsOn: job % was deleted before this transaction committed',
      array_to_string(missing[1:5], ', ') || CASE WHEN cardinality(missing) > 5 THEN ', …' ELSE '' END
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  WITH f AS (
    UPDATE jobvisor.jobs SET has_dependents = true WHERE id = ANY (found)
    RETURNING id, status
  )
  SELECT array_agg(id) FILTER (WHERE status IN ('done', 'failed', 'cancelled')) INTO finished FROM f;
  PERFORM jobvisor.settle_parents(finished);
  DELETE FROM jobvisor.new_edges WHERE id = NEW.id;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER new_edges_at_commit
  AFTER INSERT ON jobvisor.new_edges
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION jobvisor.settle_new_edges();

-- Whether some dependent of `parent` is still kept, in any status: cleanup
-- keeps such a parent, since a dead-lettered or cancelled dependent can be
-- retried and then reads its parents again (ctx.parents()). A deleted
-- dependent takes its edges along, so the parent goes at the first cleanup
-- round after its last dependent. VOLATILE: the cleanup's DELETE calls it
-- again on a row that changed while it waited (the flag written at an
-- enqueue's COMMIT), and there it must see that enqueue's committed edge, not
-- the statement's older snapshot.
CREATE FUNCTION jobvisor.has_kept_dependents(parent bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT SET enable_seqscan = off AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM jobvisor.job_dependencies AS d JOIN jobvisor.jobs AS c ON c.id = d.child_id
                  WHERE d.parent_id = parent);
END $$;

-- `jobs delete` (without --force) re-checks it on a row that changed while its
-- lock waited, as above: it must see an edge committed meanwhile.
ALTER FUNCTION jobvisor.has_live_dependents(bigint) VOLATILE SET enable_seqscan = off;

ALTER FUNCTION jobvisor.settle_parents(bigint[]) SET enable_seqscan = off;

-- Settles the edges not yet counted to `parents` that no longer exist (deleted
-- by plain SQL, or by a version that left such edges behind): each child
-- still blocked is cancelled ("parent N was deleted"), or released when it
-- runs anyway and that was its last parent; cancellations cascade down the
-- graph (settle_parents). Ids that exist are left alone. Returns how many
-- children became pending.
CREATE FUNCTION jobvisor.settle_missing_parents(parents bigint[]) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT SET enable_seqscan = off AS $$
DECLARE
  gone bigint[];
  c_id bigint[];
  c_n integer[];
  c_parent bigint[];
  cancelled bigint[];
  released integer;
BEGIN
  SELECT array_agg(p) INTO gone FROM unnest(parents) AS p
   WHERE NOT EXISTS (SELECT 1 FROM jobvisor.jobs WHERE id = p);
  IF gone IS NULL THEN
    RETURN 0;
  END IF;
  WITH e AS (
    UPDATE jobvisor.job_dependencies AS d SET counted = true
     WHERE d.parent_id = ANY (gone) AND NOT d.counted
    RETURNING d.child_id, d.parent_id
  )
  SELECT array_agg(g.child_id ORDER BY g.child_id), array_agg(g.n ORDER BY g.child_id),
         array_agg(g.parent ORDER BY g.child_id)
    INTO c_id, c_n, c_parent
    FROM (SELECT child_id, count(*)::int AS n, min(parent_id) AS parent FROM e GROUP BY child_id) AS g;
  IF c_id IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM 1 FROM jobvisor.jobs WHERE id = ANY (c_id) ORDER BY id FOR NO KEY UPDATE;
  WITH u AS (
    UPDATE jobvisor.jobs AS j
       SET parents_waiting = greatest(j.parents_waiting - c.n, 0),
           status = CASE WHEN j.on_parent_failure IS DISTINCT FROM 'run' THEN 'cancelled'
                         WHEN j.parents_waiting - c.n <= 0 THEN 'pending'
                         ELSE 'blocked' END,
           run_at = CASE WHEN j.on_parent_failure = 'run' THEN greatest(j.run_at, now()) ELSE j.run_at END,
           finished_at = CASE WHEN j.on_parent_failure IS DISTINCT FROM 'run' THEN now() END,
           last_error = CASE WHEN j.on_parent_failure IS DISTINCT FROM 'run'
                             THEN 'parent ' || c.parent || ' was deleted' ELSE j.last_error END
      FROM unnest(c_id, c_n, c_parent) AS c(child_id, n, parent)
     WHERE j.id = ANY (c_id) AND j.id = c.child_id AND j.status = 'blocked'
    RETURNING j.id, j.status, j.has_dependents
  )
  SELECT coalesce(array_agg(id) FILTER (WHERE status = 'cancelled' AND has_dependents), '{}'),
         count(*) FILTER (WHERE status = 'pending')
    INTO cancelled, released FROM u;
  RETURN released + coalesce(jobvisor.settle_parents(cancelled), 0);
END $$;

-- Re-counts the parents of `children` (jobs being retried), as in migration
-- 017, except that an edge to a parent that no longer exists counts as
-- settled: nothing could ever release a child waiting for it, and it stayed
-- blocked forever after `jobs delete PARENT --force` and a retry. A child
-- left with no edge at all (its only parent deleted) becomes pending: 017
-- re-counted only children that had edges, and left this one blocked.
CREATE OR REPLACE FUNCTION jobvisor.reblock(children bigint[]) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT SET enable_seqscan = off AS $$
DECLARE
  failed bigint[];
BEGIN
  UPDATE jobvisor.job_dependencies AS d
     SET counted = coalesce((SELECT p.status = 'done' FROM jobvisor.jobs AS p WHERE p.id = d.parent_id), true)
   WHERE d.child_id = ANY (children);
  UPDATE jobvisor.jobs AS j
     SET parents_waiting = w.n, status = CASE WHEN w.n = 0 THEN 'pending' ELSE 'blocked' END
    FROM (SELECT c.id AS child_id,
                 (SELECT count(*) FROM jobvisor.job_dependencies AS d WHERE d.child_id = c.id AND NOT d.counted)::int AS n
            FROM unnest(children) AS c(id)) AS w
   WHERE j.id = ANY (children) AND j.id = w.child_id;
  SELECT array_agg(DISTINCT d.parent_id) INTO failed
    FROM jobvisor.job_dependencies AS d JOIN jobvisor.jobs AS p ON p.id = d.parent_id
   WHERE d.child_id = ANY (children) AND NOT d.counted AND p.status IN ('failed', 'cancelled');
  RETURN coalesce(jobvisor.settle_parents(failed), 0);
END $$;
