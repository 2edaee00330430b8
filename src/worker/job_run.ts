/**
 * A running job in its worker thread, and the `ctx` its task receives
 * (entry.ts holds the runs of a session and settles them).
 */
import type pg from 'pg';
import type pino from 'pino';
import { eachParent, listParents, type ParentJob } from '../queue/parents.ts';
import { SnoozeError } from './errors.ts';
import type { TaskError } from './protocol.ts';
import { encodeProgress } from './report.ts';
import { DurableSteps, type ClaimedSteps, type StepEnv } from './steps.ts';
import type { JobInfo, TaskConfig, TaskContext, WaitResult } from './types.ts';

/** What a run reaches through its session: made once per session, shared by its runs. */
export interface RunOwner {
  settle(run: JobRun, error: TaskError | null): boolean;
  progress(run: JobRun, json: string): void;
  /** The thread's logger; a run's ctx.log is its child. */
  log: pino.Logger;
  /** ctx.db: the thread's pool, opened on first use. */
  db(): pg.Pool;
  config: TaskConfig;
  steps: StepEnv;
}

/**
 * A running job, and the `ctx` its task receives. One object per job with its
 * getters on the prototype: at tens of thousands of no-op jobs per second each
 * closure or object made per job shows up as garbage-collector time, which is
 * CPU taken from PostgreSQL. The logger, the AbortController and `ctx.job` are
 * made on first use: most jobs of a busy queue never touch them.
 */
export class JobRun implements TaskContext {
  controller?: AbortController;
  private info?: JobInfo;
  private childLog?: TaskContext['log'];
  durable?: DurableSteps; // made by the run's first ctx.step, sleep or waitFor (steps.ts)
  claimedSteps?: ClaimedSteps; // the job's records, when the supervisor sent them (steps.ts)
  readonly started = performance.now();

  constructor(
    private readonly owner: RunOwner,
    readonly token: string,
    readonly id: string,
    readonly kind: string,
    readonly queue: string,
    readonly attempt: number,
    readonly maxAttempts: number,
  ) {}

  get job(): JobInfo {
    this.info ??= {
      id: this.id,
      kind: this.kind,
      queue: this.queue,
      attempt: this.attempt,
      maxAttempts: this.maxAttempts,
    };
    return this.info;
  }

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }

  get log(): TaskContext['log'] {
    this.childLog ??= this.owner.log.child({
      jobId: this.id,
      kind: this.kind,
      queue: this.queue,
      attempt: this.attempt,
    });
    return this.childLog;
  }

  get db(): pg.Pool {
    return this.owner.db();
  }

  get config(): TaskConfig {
    return this.owner.config;
  }

  snooze(delay: string | number): never {
    throw new SnoozeError(delay);
  }

  progress(value: unknown): void {
    this.owner.progress(this, encodeProgress(value));
  }

  parents(): Promise<ParentJob[]> {
    return listParents(this.owner.db(), this.owner.config.schema, this.id);
  }

  step<T>(name: string, fn: (step: { key: string }) => T | Promise<T>): Promise<T> {
    return (this.durable ??= new DurableSteps(this, this.owner.steps)).step(name, fn);
  }
  sleep(name: string, until: string | number | Date): Promise<void> {
    return (this.durable ??= new DurableSteps(this, this.owner.steps)).sleep(name, until);
  }
  waitFor(name: string, options: { timeout: string | number | Date }): Promise<WaitResult<never>> {
    return (this.durable ??= new DurableSteps(this, this.owner.steps)).waitFor<never>(name, options);
  }
  eachParent(): AsyncIterable<ParentJob> {
    return eachParent(this.owner.db(), this.owner.config.schema, this.id);
  }

  /** Fails the job from outside its promise (see escapes.ts) and asks the task to stop. */
  fail(error: TaskError): boolean {
    if (!this.owner.settle(this, error)) return false;
    this.controller?.abort(Object.assign(new Error(error.message), { name: 'AbortError' }));
    return true;
  }
}
