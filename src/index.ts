/**
 * jobvisor's package root: the application API. Everything `jobvisor/client`
 * exports (enqueue, the admin API, pausing queues, migrate, the errors and the
 * types), and what an app writes its tasks and starts its worker with: `run`
 * (which loads the supervisor when it is called), `defineTask`, the errors a
 * task throws, the task and event types, the built-in tasks and the
 * configuration loader. Importing it loads no worker thread pool (piscina), no
 * metrics (prom-client) and no dashboard (hono):
 * test/packaging/package_entry_points.test.ts measures it from the packed package.
 *
 * `Supervisor` is in `jobvisor/worker` only, `createDashboard` in
 * `jobvisor/dashboard` (the root's is deprecated, see dashboard/lazy.ts).
 */
export * from './entry/client.ts';
export { run } from './run/lazy.ts';
export type { RunOptions, Runner } from './run/run.ts';
export type { Events, JobRef, SupervisorEvents } from './supervisor/events.ts';
export { BUILTIN_TASKS, builtinTask } from './builtins.ts';
export type { BuiltinTaskKind } from './builtins.ts';
export { defineTask } from './worker/define_task.ts';
export type { DefinedBatchTask, DefinedTask, PayloadOfTask, SignalsOf } from './worker/define_task.ts';
export type { BatchContext, BatchTaskJob, BatchOptions, BatchOutcome, BatchTask } from './worker/batch_types.ts';
export { PermanentError, RetryLaterError, SnoozeError } from './worker/errors.ts';
export type { JobInfo, ParentJob, Task, TaskContext, TaskOptions } from './worker/types.ts';
export { StepError } from './worker/step_errors.ts';
export type { StepErrorCode } from './worker/step_errors.ts';
export type { SignalMap, WaitResult } from './worker/types.ts';
export { loadConfig } from './config/index.ts';
export type { Settings, QueueSettings, Schedule } from './config/index.ts';
export { createDashboard } from './dashboard/lazy.ts';
export type { DashboardHandler, DashboardOptions } from './dashboard/app.ts';
