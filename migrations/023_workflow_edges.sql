-- Workflows: the parents a retried child reads, and the edges of jobs that are gone.
--
-- 1. Cleanup keeps a parent while any dependent of it is kept, whatever the
--    dependent's status: a dead-lettered or cancelled child can be retried,
--    and it reads its parents again (has_kept_dependents).
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
