-- Workflows: the parents a retried child reads, and the edges of jobs that are gone.
--
-- 1. Cleanup keeps a parent while any dependent of it is kept, whatever the
--    dependent's status: a dead-lettered or cancelled child can be retried,
--    and it reads its parents again (has_kept_dependents).
-- 2. A child's edges to parents that no longer exist never hold it back: a
--    retry does not count them (reblock), and the safety net settles them
--    like a cancelled parent (settle_missing_parents).
--
-- Locks: none on jobvisor.jobs (new and replaced functions).

-- Whether some dependent of `parent` is still kept, in any status: cleanup
-- keeps such a parent, since a dead-lettered or cancelled dependent can be
-- retried and then reads its parents again (ctx.parents()). A deleted
-- dependent takes its edges along, so the parent goes at the first cleanup
-- round after its last dependent.
CREATE FUNCTION jobvisor.has_kept_dependents(parent bigint) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM jobvisor.job_dependencies AS d JOIN jobvisor.jobs AS c ON c.id = d.child_id
                  WHERE d.parent_id = parent);
END $$;

-- Settles the edges not yet counted to `parents` that no longer exist (deleted
-- by plain SQL, or by a version that left such edges behind): each child
-- still blocked is cancelled ("parent N was deleted"), or released when it
-- runs anyway and that was its last parent; cancellations cascade down the
-- graph (settle_parents). Ids that exist are left alone. Returns how many
-- children became pending.
CREATE FUNCTION jobvisor.settle_missing_parents(parents bigint[]) RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT AS $$
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
LANGUAGE plpgsql VOLATILE STRICT AS $$
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
