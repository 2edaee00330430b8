-- Blocked jobs (waiting for their parents) in an index of their own, so the
-- counts that /metrics, `jobvisor stats`'s gauges and the dashboard's overview
-- read (one branch per status, each through its partial index: see
-- src/queue/stats.ts) count them without reading the table. A job without
-- parents is never blocked, so it never enters this index: plain jobs pay no
-- extra index entry.
CREATE INDEX IF NOT EXISTS jobs_blocked_idx ON jobvisor.jobs (queue, kind) WHERE status = 'blocked';
