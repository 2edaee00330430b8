/**
 * One call of a batch task in its worker thread: the jobs of a `call` message
 * (protocol.ts) go to one `task(jobs, ctx)`, and each job settles on its own.
 *
 * Order: the task is loaded; each payload is parsed (one that cannot be
 * fails its own job, permanently, and is not passed); rate-limited jobs wait
 * for the latest start slot among them, and any whose window has passed by
 * then is handed back unstarted (start_window.ts: a batch never starts a job
 * outside its slot); the rest are passed, in the order they came. The answer
 * is read by batch_answer.ts; a throw fails every job passed. Every job passed
 * settles in the same turn of the event loop, so their results leave in one
 * message and the supervisor records them together.
 *
 * The call has one AbortController, shared by its jobs: an abort sent for any
 * of them (the call's timeout, shutdown, every lease lost) fires ctx.signal.
 * Errors that escape the call's promise are charged to every job still
 * unsettled (escapes.ts), like a throw.
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import { startCallTrace, type CallTrace } from './batch_tracing.ts';
import { readAnswer } from './batch_answer.ts';
import type { BatchContext, BatchTaskJob, BatchTask } from './batch_types.ts';
import { toTaskError, withoutSecrets } from './convert.ts';
import { SnoozeError } from './errors.ts';
import { currentJob, type EscapableJob } from './escapes.ts';
import { parsePayload } from './payload.ts';
import type { CallMessage, TaskError } from './protocol.ts';
import { missedWindow, reachStartWindow } from './start_window.ts';
import { tracingOn } from './tracing.ts';
import type { ParentJob, Task, TaskConfig } from './types.ts';

/** A job of the call, as the session holds it (entry.ts's JobRun is one). */
export interface CallMember {
  readonly token: string;
  readonly id: string;
  readonly kind: string;
  readonly queue: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  controller?: AbortController;
  progress(value: unknown): void;
  parents(): Promise<ParentJob[]>;
}

/** What a call uses of its session. */
export interface CallHost<M extends CallMember> {
  /** The kind's task, loaded (a promise while it loads). */
  task(kind: string): Task | Promise<Task>;
  /** Records a job's end once; false when it had already ended. */
  settle(member: M, error: TaskError | null, result?: string): boolean;
  log: Logger;
  db(): pg.Pool;
  config: TaskConfig;
  maxResultBytes: number;
  /** A payload the claim did not carry (payload_read.ts), read for `member`. */
  readPayload(member: M, signal: AbortSignal): Promise<string>;
}

/** Runs the call to its end; never rejects. */
export function runCall<M extends CallMember>(members: M[], message: CallMessage, host: CallHost<M>): Promise<void> {
  const controller = new AbortController();
  for (const m of members) m.controller = controller;
  const call: EscapableJob = {
    id: `batch call ${message.callId}`,
    fail(error) {
      let failed = false;
      for (const m of members) if (host.settle(m, error)) failed = true;
      if (failed) controller.abort(Object.assign(new Error(error.message), { name: 'AbortError' }));
      return failed;
    },
  };
  return currentJob.run(call, execute, members, message, host, controller);
}

async function execute<M extends CallMember>(
  members: M[],
  message: CallMessage,
  host: CallHost<M>,
  controller: AbortController,
): Promise<void> {
  let trace: CallTrace | undefined;
  const payloads: unknown[] = [];
  try {
    const kind = members[0]?.kind as string;
    const task = (await host.task(kind)) as unknown as BatchTask;
    const passed = await reachWindows(await parsed(members, message, host, controller.signal), message, host);
    if (passed.length === 0) return;
    for (const p of passed) payloads.push(p.payload);
    const jobs = passed.map(({ member, payload }) => new CallJob(member, payload));
    const ctx = new CallContext(host, jobs, message, controller.signal);
    if (tracingOn())
      trace = startCallTrace({
        callId: message.callId,
        kind,
        queue: jobs[0]?.queue as string,
        ids: jobs.map((j) => j.id),
        attempts: jobs.map((j) => j.attempt),
        traceContexts: passed.map((p) => message.traceContexts?.[p.index]),
      });
    const value: unknown = trace ? await trace.run(() => task(jobs, ctx)) : await task(jobs, ctx);
    const answers = readAnswer(value, jobs.length, host.maxResultBytes);
    passed.forEach(({ member }, i) => {
      const { error, result } = answers[i] as (typeof answers)[number];
      host.settle(member, error && withoutSecrets(error, passed[i]?.payload), result);
      trace?.jobEnded(i, error);
    });
    trace?.end();
  } catch (err) {
    // An error that quotes the jobs' input quotes no secret of any of them (secrets.ts).
    const error = withoutSecrets(toTaskError(err), payloads);
    for (const m of members) host.settle(m, error);
    trace?.end(err);
  }
}

interface Passed<M> {
  member: M;
  payload: unknown;
  /** Its index in the message. */
  index: number;
}

/** The members whose payload reads and parses; the others fail now, each on its own. */
async function parsed<M extends CallMember>(
  members: M[],
  message: CallMessage,
  host: CallHost<M>,
  signal: AbortSignal,
): Promise<Array<Passed<M>>> {
  const read = await Promise.all(
    members.map(async (member, index) => {
      let text: string | null | undefined = message.payloads[index];
      try {
        text ??= await host.readPayload(member, signal);
        return { member, payload: parsePayload(text), index };
      } catch (err) {
        host.settle(member, toTaskError(err));
        return null;
      }
    }),
  );
  return read.filter((p) => p !== null);
}

/**
 * Waits for the latest start slot among rate-limited members, then hands back
 * (unstarted) those whose window has passed: one start for the call, inside
 * every passed job's window.
 */
async function reachWindows<M extends CallMember>(
  passed: Array<Passed<M>>,
  message: CallMessage,
  host: CallHost<M>,
): Promise<Array<Passed<M>>> {
  const { notBeforeMs, notAfterMs } = message;
  if (!notAfterMs) return passed;
  let from = -Infinity;
  for (const p of passed) if (notAfterMs[p.index] !== undefined) from = Math.max(from, notBeforeMs?.[p.index] ?? from);
  if (from > -Infinity) await reachStartWindow(from, Infinity);
  const now = Date.now();
  return passed.filter((p) => {
    const notAfter = notAfterMs[p.index];
    if (notAfter === undefined || now <= notAfter) return true;
    host.settle(p.member, missedWindow(now - notAfter));
    return false;
  });
}

/** A job as the task sees it. */
class CallJob<M extends CallMember> implements BatchTaskJob {
  constructor(
    private readonly member: M,
    readonly payload: unknown,
  ) {}
  get id(): string {
    return this.member.id;
  }
  get kind(): string {
    return this.member.kind;
  }
  get queue(): string {
    return this.member.queue;
  }
  get attempt(): number {
    return this.member.attempt;
  }
  get maxAttempts(): number {
    return this.member.maxAttempts;
  }
  progress(value: unknown): void {
    this.member.progress(value);
  }
  parents(): Promise<ParentJob[]> {
    return this.member.parents();
  }
}

/** The call's ctx; its logger is made on first use. */
class CallContext<M extends CallMember> implements BatchContext {
  private childLog?: Logger;
  readonly key: unknown;

  constructor(
    private readonly host: CallHost<M>,
    private readonly jobs: ReadonlyArray<CallJob<M>>,
    private readonly message: CallMessage,
    readonly signal: AbortSignal,
  ) {
    this.key = message.key === undefined ? undefined : (JSON.parse(message.key) as unknown);
  }
  get log(): Logger {
    const first = this.jobs[0];
    this.childLog ??= this.host.log.child({
      kind: first?.kind,
      queue: first?.queue,
      batch: this.message.callId,
      jobIds: this.jobs.map((j) => j.id),
    });
    return this.childLog;
  }
  get db(): pg.Pool {
    return this.host.db();
  }
  get config(): TaskConfig {
    return this.host.config;
  }
  snooze(delay: string | number): never {
    throw new SnoozeError(delay);
  }
}
