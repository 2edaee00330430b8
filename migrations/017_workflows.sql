-- Provisional: the workflow schema the admin views read (status `blocked`, the
-- dependency edges). The engine's migration 017 replaces this file at merge.

ALTER TABLE jobvisor.jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobvisor.jobs
  ADD CONSTRAINT jobs_status_check
  CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled', 'blocked')) NOT VALID;
ALTER TABLE jobvisor.jobs VALIDATE CONSTRAINT jobs_status_check;

CREATE TABLE jobvisor.job_dependencies (
  child_id  bigint NOT NULL,
  parent_id bigint NOT NULL,
  PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX job_dependencies_parent_idx ON jobvisor.job_dependencies (parent_id);
