/**
 * The admin API: every statement the CLI (`jobvisor jobs …`, `stats`) and the
 * dashboard need, in one place, so there is no second copy of the SQL.
 *
 * Reads meant for the dashboard (overview, listJobs, countJobs, …) are shaped
 * to stay fast on a table of millions of rows; give them a pool whose
 * statement_timeout is short (createPool's `statementTimeoutMs`), so a
 * pathological filter fails instead of holding a connection.
 */
export { BULK_BATCH_SIZE, cancelJobs, deleteJobs, retryFailedInBatches, retryJobs, runJobsNow } from './actions.ts';
export { BATCH_LIMIT, batchCallOf, type BatchCallJobs } from './batch.ts';
export { deadLetterGroups, type DeadLetterGroup } from './dead_letters.ts';
export { checkIds, containsPattern } from './filter.ts';
export { attemptsOf } from './attempts.ts';
export { getJob, timeline } from './job.ts';
export { stepsOf, type StepRow } from './steps_of.ts';
export { COUNT_CAP, countJobs, listJobs, MAX_PAGE, statusOf } from './list.ts';
export { overview, OVERVIEW_CAP, type Overview, type QueueOverview } from './overview.ts';
// Pausing is part of the operator's API too (the CLI's `queues`, the dashboard's queue controls).
export { pauseQueue, pausedQueues, resumeQueue } from '../pause.ts';
export { QUEUE as QUEUE_NAME } from '../../names.ts';
export { queueDetail, servingSupervisors, unservedQueues, TOP_KEYS, type QueueDetail } from './queue.ts';
export { throughput, THROUGHPUT_RANGES, type ThroughputBucket } from './throughput.ts';
export { nextFireTimes, scheduleSummaries, type ScheduleSummary } from './schedules.ts';
export { stats, type Stats } from './stats.ts';
export { listSupervisors } from './supervisors.ts';
// The supervisors write their own rows; operators and tests may too (a row to show).
export {
  RELATED_LIMIT,
  relationsOf,
  WORKFLOW_LIMIT,
  workflowOf,
  type RelatedJob,
  type RelatedJobs,
  type Relations,
  type Workflow,
  type WorkflowNode,
} from './workflow.ts';
export {
  beatSupervisor,
  expireSupervisors,
  removeSupervisor,
  SUPERVISOR_EXPIRY_LEASES,
  type QueueConfig,
  type SupervisorInfo,
} from '../presence.ts';
export { retryDependents } from './graph_actions.ts';
export {
  ACTION_STATUSES,
  JOB_STATUSES,
  timeText,
  type Attempt,
  type AttemptError,
  type BulkAction,
  type BulkOptions,
  type BulkResult,
  type BulkTarget,
  type JobDetail,
  type JobFilter,
  type JobRow,
  type JobStatus,
  type Page,
  type SupervisorRow,
  type Time,
  type TimelineEvent,
} from './types.ts';
