/**
 * The public shapes of enqueue() and enqueueMany(): kinds, options, results and
 * typed payloads.
 *
 * Kinds are checked against the app's registry, `TaskPayloads`. The package
 * declares no kind in it: an app with no declaration enqueues any kind with any
 * payload; once the app declares one kind, an undeclared kind is a compile
 * error, except through the explicit `DynamicKind` or a `defineJob` handle.
 * The built-ins' payload types are opt-in (`BuiltinTaskPayloads`), so an app's
 * own `welcome_email` is its own type, not a clash with jobvisor's.
 */

/**
 * Payload types by kind: the app's registry of kinds, empty in the package.
 * `declare module 'jobvisor' { interface TaskPayloads { resize: { id: number } } }`.
 * With at least one kind declared, enqueue and enqueueMany refuse the others.
 */
export interface TaskPayloads {}

/**
 * The payloads of jobvisor's built-in tasks, for an app that enables them:
 * `interface TaskPayloads extends Pick<BuiltinTaskPayloads, 'thumbnail'> {}`.
 */
export interface BuiltinTaskPayloads {
  welcome_email: { user_id: number };
  thumbnail: { source: string; widths: number[]; outDir?: string };
  daily_report: { day?: string; timezone?: string };
}

/** The kinds the app declared in TaskPayloads (never when it declared none). */
export type KnownKind = Extract<keyof TaskPayloads, string>;

/** The kinds enqueue accepts by name: the declared ones, or any text while none is declared. */
export type Kind = [KnownKind] extends [never] ? string : KnownKind;

declare const dynamicKind: unique symbol;
/**
 * A kind chosen at run time that the registry does not list (read from a
 * request, a config file, another language's task), enqueued on purpose:
 * `enqueue(db, kind as DynamicKind, payload)`. Its payload is `unknown`.
 * Checked at run time like every kind.
 */
export type DynamicKind = string & { readonly [dynamicKind]: true };

/** The payload type of a kind: its TaskPayloads entry, else `unknown`. */
export type PayloadOf<K extends string> = K extends KnownKind ? TaskPayloads[K] : unknown;

/** What a job declared with defineJob gets when the caller names no other value. */
export interface JobDefaults {
  /** The job's queue; default "default". */
  queue?: string;
  /** Lower runs first; default 0. */
  priority?: number;
  /** Default: 8 (the column's default). */
  maxAttempts?: number;
}

/**
 * A kind declared with `defineJob<P>(kind, defaults)`: pass it to enqueue in
 * place of the kind, or build enqueueMany's jobs with `job(payload)`. The
 * caller's own options win over the defaults.
 */
export interface JobDefinition<P = unknown> {
  readonly kind: string;
  readonly options: Readonly<JobDefaults>;
  /** A job of this kind for enqueueMany, with the defaults filled in where `options` names none. */
  job(payload: P, options?: Omit<JobSpec, 'kind' | 'payload'>): JobSpec<DynamicKind>;
}

/** The payload type of a defineJob handle. */
export type PayloadOfJob<J> = J extends JobDefinition<infer P> ? P : never;

/** What enqueue takes as its kind: a declared kind, a DynamicKind, or a defineJob handle. */
export type KindOrJob = Kind | DynamicKind | JobDefinition<never>;

/** The payload enqueue expects with `kind`. */
export type PayloadFor<K> = K extends JobDefinition<infer P> ? P : K extends string ? PayloadOf<K> : never;

/**
 * Options of enqueue (and defaults of enqueueMany's jobs): where the job goes
 * (`queue`, `priority`), when (`runAt` or `delay`), how often it may try
 * (`maxAttempts`), de-duplication (`uniqueKey`), per-key flow control
 * (`concurrencyKey`) and workflow parents (`dependsOn`). Bad values throw
 * InputError before anything is written.
 */
export interface EnqueueOptions {
  /** Default: the defineJob handle's queue, else "default" (never what another part of the process read). */
  queue?: string;
  /** Lower runs first; default 0. */
  priority?: number;
  /** Not before this time (Date or ISO 8601 text). */
  runAt?: Date | string;
  /** Not before now + delay (ms, or a duration such as "10s"). */
  delay?: number | string;
  maxAttempts?: number;
  /** At most one job per (kind, uniqueKey) while the row exists; a duplicate is skipped. */
  uniqueKey?: string;
  /** Groups jobs for the queue's per-key limits (perKeyConcurrency, rateLimit.perKey); column concurrency_key. */
  concurrencyKey?: string;
  /**
   * Job ids this job waits for: it stays `blocked` until every one is done
   * (README "Workflows"). A missing id is an InputError; nothing is written.
   */
  dependsOn?: Array<string | number | bigint>;
  /** When a parent is dead-lettered or cancelled: cancel this job (default, cascading) or run it anyway. */
  onParentFailure?: 'cancel' | 'run';
  /** Schema of the jobs table; default "jobvisor". */
  schema?: string;
  /** Largest payload accepted, in bytes of JSON; default 1 MiB. */
  maxPayloadBytes?: number;
}

/**
 * One enqueued job. `id` is always there: the new job's, or, for a skipped
 * duplicate, the id of the job that holds the unique key (read after the
 * insert; should that job be deleted in between, the insert is tried again).
 */
export interface EnqueueResult {
  id: string;
  /** True when a job with the same kind and uniqueKey already existed and this one was skipped. */
  duplicate: boolean;
}

/**
 * One job of enqueueMany: its `kind`, `payload` and the options of enqueue
 * (`dependsOn` may also name an earlier job of the same call by `{ index }`).
 */
export interface JobSpec<K extends string = string> extends Omit<
  EnqueueOptions,
  'schema' | 'maxPayloadBytes' | 'dependsOn'
> {
  kind: K;
  /** Parent ids, or `{ index: n }` for the n-th job of the same call (n below this job's own index). */
  dependsOn?: Array<string | number | bigint | { index: number }>;
  payload?: PayloadOf<K>;
}

/**
 * The union of JobSpec<K> over the kinds K, so each job's payload must fit its
 * own kind (a plain JobSpec<K> over a union of kinds would accept any payload).
 */
export type JobSpecOf<K extends string> = K extends string ? JobSpec<K> : never;

/**
 * A job of an enqueueMany batch: of a declared kind (told apart by `kind`, its
 * payload checked against that kind), or of a DynamicKind (as `job()` of a
 * defineJob handle gives). With no kind declared, any kind and payload.
 */
export type BatchJob = JobSpecOf<Kind> | JobSpec<DynamicKind>;
