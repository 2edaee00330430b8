/**
 * `jobvisor/client`: what a service that only enqueues and inspects jobs needs:
 * enqueue, the admin API (createAdmin), pausing queues, migrate, the errors and
 * the types.
 * It loads no worker, no supervisor, no dashboard and no metrics (no piscina,
 * hono or prom-client); test/packaging/package_entry_points.test.ts measures it from the
 * packed package and fails when it does.
 */
export { enqueue, enqueueMany, validateJob } from '../queue/enqueue.ts';
export type {
  BatchJob,
  BuiltinTaskPayloads,
  DynamicKind,
  EnqueueOptions,
  EnqueueResult,
  JobDefaults,
  JobDefinition,
  JobSpec,
  JobSpecOf,
  Kind,
  KindOrJob,
  KnownKind,
  PayloadFor,
  PayloadOf,
  PayloadOfJob,
  TaskPayloads,
} from '../queue/enqueue_types.ts';
export { defineJob } from '../queue/define_job.ts';
export { signal, SignalError } from '../queue/signal.ts';
export type { SignalOptions, SignalOutcome } from '../queue/signal.ts';
export { migrate } from '../db/migrate.ts';
export {
  InputError,
  ConfigError,
  DatabaseAccessError,
  JobvisorError,
  NotMigratedError,
  ParentsTooLargeError,
  TaskSetupError,
} from '../errors.ts';
export { createAdmin } from '../queue/admin/handle.ts';
export type { Admin, AdminOptions } from '../queue/admin/handle.ts';
export { ACTION_STATUSES, JOB_STATUSES, nextFireTimes, timeText } from '../queue/admin/index.ts';
// The functions that take a store first: deprecated, createAdmin's methods replace them.
export {
  cancelJobs,
  countJobs,
  deadLetterGroups,
  deleteJobs,
  getJob,
  listJobs,
  listSupervisors,
  overview,
  relationsOf,
  retryJobs,
  runJobsNow,
  scheduleSummaries,
  stats,
  throughput,
  workflowOf,
} from '../queue/admin/deprecated.ts';
export type {
  BulkAction,
  BulkOptions,
  BulkResult,
  BulkTarget,
  DeadLetterGroup,
  JobDetail,
  JobFilter,
  JobRow,
  JobStatus,
  Overview,
  Page,
  QueueOverview,
  RelatedJob,
  RelatedJobs,
  Relations,
  ScheduleSummary,
  Stats,
  SupervisorRow,
  ThroughputBucket,
  Time,
  TimelineEvent,
  Workflow,
  WorkflowNode,
} from '../queue/admin/index.ts';
export { pauseQueue, resumeQueue, listQueues } from '../queue/pause.ts';
export type { QueueInfo, QueueApiOptions } from '../queue/pause.ts';
