/**
 * The supervisor's one typed event map. Metrics and logs subscribe; queue code
 * never imports prom-client or pino. Per-job events carry arrays so a batch of
 * a thousand completions is one emit.
 */
import { EventEmitter } from 'node:events';
import type { ReapedJob } from '../queue/reaper.ts';
import type { Cleaned } from '../queue/cleanup.ts';
import type { DurableReport } from '../worker/protocol.ts';
import type { ClaimedJob, JobRef } from '../queue/types.ts';
import type { ResolvedTaskOptions } from '../worker/task_options.ts';

export type { JobRef };

/**
 * The JobRef of a claimed job, made once and kept on it. Every event that
 * names jobs hands listeners these, never the claimed job itself, whose
 * claim token fences its writes and whose payload may hold what the job's
 * producer meant for its task alone.
 */
export function refOf(job: ClaimedJob): JobRef {
  return (job.ref ??= { id: job.id, queue: job.queue, kind: job.kind, attempt: job.attempt });
}

/** Outcomes of a batch: parallel arrays, so a batch of a thousand costs no per-job objects. */
export interface FinishedBatch {
  jobs: JobRef[];
  runMs: number[];
}

export interface FailedBatch extends FinishedBatch {
  errors: string[];
  /** Each failure's stack frames (null: none), when the writer knows them. */
  stacks?: Array<string | null>;
}

/**
 * The event map of `runner.events` (and `supervisor.events`): each `noun:verb`
 * name with the arguments its listeners get. Events are for observers (logs,
 * metrics, tests); no behaviour depends on a listener, and a listener that
 * throws is logged, never fatal. Jobs appear as JobRef, never with payloads.
 */
export interface Events {
  'supervisor:started': [{ supervisor: string; queues: string[] }];
  'supervisor:draining': [{ supervisor: string; reason: string }];
  'supervisor:stopped': [{ supervisor: string }];
  'job:claimed': [{ queue: string; count: number }];
  'job:started': [{ jobs: JobRef[]; waitMs: number[] }];
  'job:completed': [FinishedBatch];
  'job:retried': [FailedBatch];
  'job:dead': [FailedBatch];
  /** Tasks that snoozed: back to pending after delaysMs, no attempt used. */
  'job:snoozed': [{ jobs: JobRef[]; runMs: number[]; delaysMs: number[] }];
  /** Tasks that slept (ctx.sleep): pending again, due at wakesMs (ms since the epoch), no attempt used. */
  'job:slept': [{ jobs: JobRef[]; runMs: number[]; wakesMs: number[] }];
  /** Tasks that waited for a signal (ctx.waitFor): parked until it comes or deadlinesMs, no attempt used. */
  'job:waiting': [{ jobs: JobRef[]; runMs: number[]; deadlinesMs: number[] }];
  /** Runs that used ctx.step, sleep or waitFor, with what each reported of them (worker/protocol.ts). */
  'job:steps': [{ job: JobRef; report: DurableReport }];
  /** Waiting jobs whose deadline passed, made pending by this supervisor's reaper round. */
  'wait:timedOut': [{ jobs: Array<{ id: string; queue: string; kind: string }> }];
  'job:released': [{ jobs: JobRef[]; reason: string }];
  /** Outcomes the database refused because this supervisor no longer owned the attempt. */
  'job:fenced': [{ jobs: JobRef[] }];
  'job:timeout': [{ job: JobRef; timeoutMs: number }];
  /** A batch task's call started with `size` jobs; its first job had gathered for `fillMs`. */
  'batch:called': [{ queue: string; kind: string; size: number; fillMs: number }];
  'lease:lost': [{ jobs: JobRef[] }];
  'lease:reaped': [{ jobs: ReapedJob[] }];
  'jobs:cleaned': [{ rows: Cleaned[] }];
  'thread:died': [{ jobs: JobRef[]; error: string }];
  /** A terminated worker thread is still alive (see thread_watch.ts); `stuck` counts such threads now. */
  'thread:stuck': [{ threadId: number; stuck: number }];
  /** A stuck thread has finally died. */
  'thread:unstuck': [{ threadId: number; stuck: number }];
  'schedule:fired': [
    { name: string; kind: string; queue: string; fireTime: Date; jobId: string | null; duplicate: boolean },
  ];
  /** A served queue is paused (also its state at start): nothing more of it is claimed here. */
  'queue:paused': [{ queue: string }];
  /** A served queue is not paused (also its state at start). */
  'queue:resumed': [{ queue: string }];
  'listener:connected': [{ reconnect: boolean }];
  /** `readOnly`: LISTEN failed because the server is in recovery (a standby). */
  'listener:lost': [{ error: string; readOnly?: boolean }];
  /** The server reached takes no writes (in recovery, or read-only): once per episode (primary_watch.ts). */
  'database:read-only': [{ loop: string; error: string }];
  /** A writable primary is reached again after `unwritableMs`; `failover`: another server, or a read-only one was seen. */
  'database:writable': [{ unwritableMs: number; readOnly: boolean; failover: boolean; address: string }];
  'db:error': [{ loop: string; err: unknown }];
  /** A periodic loop's round succeeded after `db:error`s (loop.ts): its failing streak ends. */
  'db:recovered': [{ loop: string }];
  'pool:changed': [{ threads: number; busy: number; queued: number }];
  /** A loop's rounds have failed for longer than a lease (see metrics/loop_health.ts). */
  'loop:failed': [{ loop: string; failingMs: number }];
  'loop:recovered': [{ loop: string; failedMs: number }];
  /** The supervisor was busy when every task's options were due to be read: the read waits for a quiet moment. */
  'tasks:deferred': [{ held: number }];
  /** A task's options were read (at its kind's first job, or at the read of every task); null: it declares none. */
  'task:read': [{ kind: string; options: ResolvedTaskOptions | null }];
}

/**
 * The typed EventEmitter of a supervisor (`runner.events`):
 * `runner.events.on('job:dead', ({ jobs, errors }) => …)`.
 */
export class SupervisorEvents extends EventEmitter<Events> {}
