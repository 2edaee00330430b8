/**
 * Steps and signals go with their job (migrations 027, 028). A clause for the
 * statements that delete jobs: cleanup, the keep-none completion and `jobs
 * delete`. `gone` is the CTE of deleted rows, with their `id` and `has_steps`;
 * job_steps and job_signals are read only for the rows so flagged, so a batch
 * of plain jobs probes them with an empty array (no row, no heap page).
 */
export const DROP_STEPS = `steps AS (
  DELETE FROM jobvisor.job_steps WHERE job_id = ANY (ARRAY(SELECT id FROM gone WHERE has_steps))
), signals AS (
  DELETE FROM jobvisor.job_signals WHERE job_id = ANY (ARRAY(SELECT id FROM gone WHERE has_steps))
)`;
