/**
 * What an app writes its tasks and starts its worker with, shared by the
 * package root and `jobvisor/worker`: `defineTask`, the errors a task throws,
 * the task, batch and event types, the built-in tasks and the configuration
 * loader. Each entry point adds its own `run` (the root's loads the supervisor
 * when it is called; the worker's is the supervisor's own). Not an entry point
 * of the package itself.
 */
export type { Events, JobRef, SupervisorEvents } from '../supervisor/events.ts';
export { BUILTIN_TASKS, builtinTask } from '../builtins.ts';
export type { BuiltinTaskKind } from '../builtins.ts';
export { defineTask } from '../worker/define_task.ts';
export type { DefinedBatchTask, DefinedTask, PayloadOfTask, SignalsOf } from '../worker/define_task.ts';
export type { BatchContext, BatchTaskJob, BatchOptions, BatchOutcome, BatchTask } from '../worker/batch_types.ts';
export { PermanentError, RetryLaterError, SnoozeError } from '../worker/errors.ts';
export type { JobInfo, ParentJob, Task, TaskContext, TaskOptions } from '../worker/types.ts';
export { StepError } from '../worker/step_errors.ts';
export type { StepErrorCode } from '../worker/step_errors.ts';
export type { SignalMap, WaitResult } from '../worker/types.ts';
export { loadConfig } from '../config/index.ts';
export type { Settings, QueueSettings, Schedule } from '../config/index.ts';
