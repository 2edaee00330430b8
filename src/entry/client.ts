/**
 * `jobvisor/client`: what a service that only enqueues and inspects jobs needs:
 * enqueue, the admin API, pausing queues, migrate, the errors and the types.
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
export {
  ACTION_STATUSES,
  cancelJobs,
  countJobs,
  deadLetterGroups,
  deleteJobs,
  getJob,
  JOB_STATUSES,
  listJobs,
  listSupervisors,
  nextFireTimes,
  overview,
  relationsOf,
  retryJobs,
  runJobsNow,
  scheduleSummaries,
  stats,
  throughput,
  timeText,
  workflowOf,
} from '../queue/admin/index.ts';
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
