/** jobvisor's application API. */
export { enqueue, enqueueMany, validateJob } from './queue/enqueue.ts';
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
} from './queue/enqueue_types.ts';
export { defineJob } from './queue/define_job.ts';
export { run } from './run/run.ts';
export type { RunOptions, Runner } from './run/run.ts';
export type { Events, JobRef, SupervisorEvents } from './supervisor/events.ts';
export { BUILTIN_TASKS, builtinTask } from './builtins.ts';
export type { BuiltinTaskKind } from './builtins.ts';
export { defineTask } from './worker/define_task.ts';
export type { DefinedBatchTask, DefinedTask, PayloadOfTask } from './worker/define_task.ts';
export type { BatchContext, BatchTaskJob, BatchOptions, BatchOutcome, BatchTask } from './worker/batch_types.ts';
export { PermanentError, RetryLaterError, SnoozeError } from './worker/errors.ts';
export type { JobInfo, ParentJob, Task, TaskContext, TaskOptions } from './worker/types.ts';
export { migrate } from './db/migrate.ts';
export { loadConfig } from './config/index.ts';
export type { Settings, QueueSettings, Schedule } from './config/index.ts';
export { Supervisor } from './supervisor/supervisor.ts';
export {
  InputError,
  ConfigError,
  DatabaseAccessError,
  JobvisorError,
  NotMigratedError,
  ParentsTooLargeError,
  TaskSetupError,
} from './errors.ts';
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
} from './queue/admin/index.ts';
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
} from './queue/admin/index.ts';
export { createDashboard } from './dashboard/app.ts';
export type { DashboardHandler, DashboardOptions } from './dashboard/app.ts';
export { pauseQueue, resumeQueue, listQueues } from './queue/pause.ts';
export type { QueueInfo, QueueApiOptions } from './queue/pause.ts';
