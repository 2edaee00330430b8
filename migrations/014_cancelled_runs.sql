-- Cancelled runs still going: a running job that an operator cancels keeps its
-- lease (locked_until) and gets no finished_at until the supervisor running it
-- has seen its run end (src/queue/cancelled_slot.ts). A limited queue counts
-- such a row as holding its slot while the lease lasts, so the next job of its
-- key never runs beside a task that is still stopping.
--
-- The claim of a limited queue counts them under the queue's lock, so they
-- need an index of their own. Its predicate names finished_at, never
-- locked_until: a column in any index (predicates too) makes every heartbeat,
-- which only moves locked_until, a non-HOT update (001 says why that matters).
-- The index is empty but for those runs: the reaper gives a finished_at to the
-- rest (a lease that ran out, a plain-SQL cancel of pending rows).
CREATE INDEX jobs_cancelled_running_idx ON jobvisor.jobs (queue, concurrency_key)
  WHERE status = 'cancelled' AND finished_at IS NULL;
