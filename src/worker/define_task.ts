/**
 * `defineTask<P>(fn, options?)`: a task written once, typed once. The payload
 * type `P` reaches the task (its first argument) and, through the app's
 * `TaskPayloads` declaration, `enqueue` and `enqueueMany`:
 *
 * ```ts
 * // tasks/send_invoice.ts
 * export default defineTask<{ invoiceId: number }>(async (payload, ctx) => { … }, { queue: 'mail' });
 * // anywhere in the app
 * declare module 'jobvisor' {
 *   interface TaskPayloads { send_invoice: PayloadOfTask<typeof import('./tasks/send_invoice.ts').default> }
 * }
 * ```
 * With `batch` in its options, the function is a batch task: it receives the
 * jobs of a call (`BatchTaskJob<P>[]`) and answers nothing or one `R | Error` per
 * job (batch_types.ts); `PayloadOfTask` gives the payload of one job all the same.
 * The options are what `export const options` declares (types.ts); a module
 * that exports both uses its `options` export.
 *
 * The second type parameter declares the signals the task waits for, name →
 * payload: `ctx.waitFor('approved', …)` then resolves to that payload's type,
 * and a sender can check its payload with `SignalsOf`:
 * ```ts
 * export default defineTask<{ orderId: number }, { approved: { by: string } }>(async (payload, ctx) => {
 *   const approval = await ctx.waitFor('approved', { timeout: '2d' });
 *   if (approval.received) console.log(approval.payload.by);
 * });
 * await signal<SignalsOf<typeof approveOrder>['approved']>(db, jobId, 'approved', { by: 'ann' });
 * ```
 * A step's result type is fn's (ctx.step), with nothing to declare.
 */
import type { BatchOptions, BatchTask } from './batch_types.ts';
import type { SignalMap, TaskContext, TaskOptions } from './types.ts';

/** A task made by defineTask: the function, with its options attached. */
export interface DefinedTask<P, R = unknown, S extends SignalMap = SignalMap> {
  (payload: P, ctx: TaskContext<S>): R;
  readonly options?: TaskOptions;
}

/** A batch task made by defineTask (options with `batch`). */
export interface DefinedBatchTask<P, R = unknown> extends BatchTask<P, R> {
  readonly options: TaskOptions & { batch: BatchOptions };
}

/**
 * Marks a function as a task and fixes its payload type `P` once: the task
 * gets `P` as its first argument, and `PayloadOfTask<typeof task>` gives the
 * same type to `enqueue` through the app's `TaskPayloads` declaration. The
 * options are those a module may export as `options` (queue, timeout,
 * exclusiveThread, batch); they are frozen onto the function. With
 * `batch: { maxSize, maxWait }` the function gets an array of jobs instead
 * (a batch task, DefinedBatchTask).
 *
 * @param fn The task: `(payload, ctx) => result`; its result is stored on the job.
 * @param options Defaults for the task's jobs (see TaskOptions).
 * @returns `fn` itself, with `options` attached.
 * @throws TypeError when `fn` is not a function.
 *
 * @example
 * ```ts
 * // tasks/send_invoice.ts
 * export default defineTask<{ invoiceId: number }>(async ({ invoiceId }, ctx) => {
 *   ctx.log.info({ invoiceId }, 'sending');
 * }, { queue: 'mail', timeout: '2m' });
 * ```
 */
export function defineTask<P = unknown, R = unknown>(
  fn: BatchTask<P, R>,
  options: TaskOptions & { batch: BatchOptions },
): DefinedBatchTask<P, R>;
/** A task of one job at a time: see the overload above. */
export function defineTask<P = unknown, S extends SignalMap = SignalMap, R = unknown>(
  fn: (payload: P, ctx: TaskContext<S>) => R,
  options?: TaskOptions & { batch?: undefined },
): DefinedTask<P, R, S>;
export function defineTask(fn: (...args: never[]) => unknown, options?: TaskOptions): unknown {
  if (typeof fn !== 'function') throw new TypeError('defineTask(fn, options?): fn must be a function');
  if (options !== undefined) Object.defineProperty(fn, 'options', { value: Object.freeze({ ...options }) });
  return fn;
}

/** The payload type of a task function (one made by defineTask, or any `(payload, ctx) => …`); of one job for a batch task. */
export type PayloadOfTask<T> =
  T extends DefinedBatchTask<infer P, unknown> ? P : T extends (payload: infer P, ctx: never) => unknown ? P : never;

/** The signals a task declared (defineTask's second type parameter), name → payload. */
export type SignalsOf<T> = T extends (payload: never, ctx: TaskContext<infer S>) => unknown ? S : SignalMap;
