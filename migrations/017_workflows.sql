-- Workflows: a job may wait for other jobs (its parents) to be done.
--
-- A waiting job is `blocked`; `parents_waiting` counts its parents not yet
-- settled (done, or failed/cancelled when it runs anyway). The job that
-- settles the last one moves it to `pending` in the same transaction, through
-- jobvisor.settle_parents(), which the done and dead-letter writes call only
-- for rows with `has_dependents` set. A plain job keeps all three columns NULL:
-- no index entry, no trigger, no statement more than before.
--
-- Locks: ADD COLUMN without a default and the CHECK constraints NOT VALID are
-- catalog changes (ACCESS EXCLUSIVE for milliseconds). The status constraint is
-- not validated: every existing row passed the old one, which was narrower, so
-- a VALIDATE would scan the whole table under that lock to prove nothing.

ALTER TABLE jobvisor.jobs
  ADD COLUMN parents_waiting integer,   -- NULL: not a workflow child
  ADD COLUMN on_parent_failure text,    -- NULL: 'cancel'
  ADD COLUMN has_dependents boolean;    -- set on a parent when a child is enqueued

ALTER TABLE jobvisor.jobs
  DROP CONSTRAINT jobs_status_check,
  ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled', 'blocked')) NOT VALID,
  ADD CONSTRAINT jobs_on_parent_failure_check CHECK (on_parent_failure IN ('cancel', 'run')) NOT VALID;

-- One row per edge. `counted`: this parent's settling has been applied to the
-- child's parents_waiting, so a parent that becomes done twice (re-queued after
-- success) never counts twice. No foreign keys: those would put a trigger on
-- every delete from jobs, plain jobs included.
CREATE TABLE jobvisor.job_dependencies (
  child_id  bigint  NOT NULL,
  parent_id bigint  NOT NULL,
  counted   boolean NOT NULL DEFAULT false,
  PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX job_dependencies_parent_idx ON jobvisor.job_dependencies (parent_id);
-- The safety-net pass reads only edges not yet counted.
CREATE INDEX job_dependencies_uncounted_idx ON jobvisor.job_dependencies (parent_id) WHERE NOT counted;

-- Applies the settling of `parents` (now done, failed or cancelled) to their
-- children: each edge not yet counted is counted once; a child whose last
-- parent settled becomes pending and due; a child of a failed or cancelled
-- parent is cancelled (naming the parent) unless it runs anyway, and the
-- cancellation cascades down. VOLATILE: each statement takes a fresh snapshot,
-- so an edge committed while the caller waited for its parent's row lock is
-- seen. Children are locked in id order, so two writers settling parents of
-- the same children wait for each other instead of deadlocking; the row lock
-- also serialises the decrement (the second writer re-reads the count).
-- Each statement names its jobs rows by `id = ANY (array)` as well as by the
-- join: without ANALYZE on a grown table the planner otherwise took the
-- parents through jobs_finished_idx (every finished row) and the children
-- through a sequential scan, and one release of 10,000 children ran for
-- over a minute; with the arrays both are index scans whatever the statistics.
-- The children's figures are aggregated into arrays first and joined through
-- unnest(), whose size the planner knows: joined to a GROUP BY of the edges
-- (estimated at 200 rows), 10,000 children became a nested loop of 10,000 ×
-- 10,000 rows (58 s).
-- Returns how many children became pending.
CREATE FUNCTION jobvisor.settle_parents(parents bigint[]) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
  settled bigint[] := parents;
  c_id bigint[];
  c_n integer[];
  c_failed_parent bigint[];
  c_failed_status text[];
  released integer := 0;
  n integer;
BEGIN
  WHILE cardinality(settled) > 0 LOOP
    WITH e AS (
      UPDATE jobvisor.job_dependencies AS d SET counted = true
        FROM jobvisor.jobs AS p
       WHERE d.parent_id = ANY (settled) AND NOT d.counted
         AND p.id = ANY (settled) AND p.id = d.parent_id AND p.status IN ('done', 'failed', 'cancelled')
      RETURNING d.child_id, d.parent_id, p.status
    )
    SELECT array_agg(g.child_id ORDER BY g.child_id), array_agg(g.n ORDER BY g.child_id),
           array_agg(g.failed_parent ORDER BY g.child_id), array_agg(g.failed_status ORDER BY g.child_id)
      INTO c_id, c_n, c_failed_parent, c_failed_status
      FROM (SELECT e.child_id, count(*)::int AS n,
                   min(e.parent_id) FILTER (WHERE e.status <> 'done') AS failed_parent,
                   min(e.status) FILTER (WHERE e.status <> 'done') AS failed_status
              FROM e GROUP BY e.child_id) AS g;
    EXIT WHEN c_id IS NULL;
    PERFORM 1 FROM jobvisor.jobs WHERE id = ANY (c_id) ORDER BY id FOR NO KEY UPDATE;
    WITH u AS (
      UPDATE jobvisor.jobs AS j
         SET parents_waiting = greatest(j.parents_waiting - c.n, 0),
             status = CASE WHEN c.failed_parent IS NOT NULL AND j.on_parent_failure IS DISTINCT FROM 'run' THEN 'cancelled'
                           WHEN j.parents_waiting - c.n <= 0 THEN 'pending'
                           ELSE 'blocked' END,
             run_at = CASE WHEN c.failed_parent IS NULL OR j.on_parent_failure = 'run'
                           THEN greatest(j.run_at, now()) ELSE j.run_at END,
             finished_at = CASE WHEN c.failed_parent IS NOT NULL AND j.on_parent_failure IS DISTINCT FROM 'run'
                                THEN now() END,
             last_error = CASE WHEN c.failed_parent IS NOT NULL AND j.on_parent_failure IS DISTINCT FROM 'run'
                               THEN 'parent ' || c.failed_parent || ' is ' || c.failed_status ELSE j.last_error END
        FROM unnest(c_id, c_n, c_failed_parent, c_failed_status) AS c(child_id, n, failed_parent, failed_status)
       WHERE j.id = ANY (c_id) AND j.id = c.child_id AND j.status = 'blocked'
      RETURNING j.id, j.status, j.has_dependents
    )
    SELECT coalesce(array_agg(id) FILTER (WHERE status = 'cancelled' AND has_dependents), '{}'),
           count(*) FILTER (WHERE status = 'pending')
      INTO settled, n FROM u;
    released := released + n;
  END LOOP;
  RETURN released;
END $$;

-- Re-counts the parents of `children` (jobs being retried): an edge counts
-- again only while its parent is done. A child whose parents are all done
-- becomes pending, else blocked; a failed or cancelled parent is applied again
-- at once (settle_parents: the child is cancelled again, or runs anyway).
CREATE FUNCTION jobvisor.reblock(children bigint[]) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
  failed bigint[];
BEGIN
  UPDATE jobvisor.job_dependencies AS d SET counted = (p.status = 'done')
    FROM jobvisor.jobs AS p
   WHERE d.child_id = ANY (children) AND p.id = d.parent_id;
  UPDATE jobvisor.jobs AS j
     SET parents_waiting = w.n, status = CASE WHEN w.n = 0 THEN 'pending' ELSE 'blocked' END
    FROM (SELECT d.child_id, count(*) FILTER (WHERE NOT d.counted)::int AS n
            FROM jobvisor.job_dependencies AS d WHERE d.child_id = ANY (children) GROUP BY d.child_id) AS w
   WHERE j.id = w.child_id;
  SELECT array_agg(DISTINCT d.parent_id) INTO failed
    FROM jobvisor.job_dependencies AS d JOIN jobvisor.jobs AS p ON p.id = d.parent_id
   WHERE d.child_id = ANY (children) AND NOT d.counted AND p.status IN ('failed', 'cancelled');
  RETURN coalesce(jobvisor.settle_parents(failed), 0);
END $$;

-- Whether job `parent` has a dependent that has not finished (so has yet to
-- read it): cleanup and delete keep such a parent. A function of its own, in
-- plpgsql so it is never inlined: written as NOT EXISTS in the cleanup
-- statement, the planner hashed the subquery (a scan of every edge) for each
-- round instead of probing the parent's edges by index.
CREATE FUNCTION jobvisor.has_live_dependents(parent bigint) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM jobvisor.job_dependencies AS d JOIN jobvisor.jobs AS c ON c.id = d.child_id
                  WHERE d.parent_id = parent AND c.status IN ('blocked', 'pending', 'running'));
END $$;
