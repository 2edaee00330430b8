/**
 * `jobvisor/worker`: what the process that runs jobs needs: `run()`, the
 * `Supervisor`, `defineTask`, the errors a task throws, the task and event
 * types, the built-in tasks and the configuration loader. It loads piscina (the
 * threads) and prom-client (the /metrics server); it does not load the
 * dashboard (hono).
 */
export { run } from '../run/run.ts';
export type { RunOptions, Runner } from '../run/run.ts';
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
export { Supervisor } from '../supervisor/supervisor.ts';
