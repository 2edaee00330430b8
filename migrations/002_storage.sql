-- Storage and autovacuum settings for a table that is updated twice per job.
--
-- Every job is inserted (pending), updated at its claim (running) and at its
-- outcome (done): two dead row versions per job, plus index entries for each.
-- At tens of thousands of jobs per second the default autovacuum trigger (20 %
-- of the table dead) lets dead tuples pile up for minutes and claims slow
-- down as the pending index fills with dead entries. Vacuum early and without
-- throttling instead; leave free space in each page so heartbeats (which only
-- move locked_until) stay HOT updates on the same page.
ALTER TABLE jobvisor.jobs SET (
  fillfactor = 85,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 5000,
  autovacuum_vacuum_insert_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0.02
);
