/**
 * A run's durable steps: ctx.step, ctx.sleep and ctx.waitFor, in the worker
 * thread (one DurableSteps per run that calls any of them; a run that calls
 * none makes none and reads nothing).
 *
 * States: fresh → loaded (the job's records, read once, on the first call;
 * calls made meanwhile share that read; a resumed job's come with it from the
 * supervisor, read right after its claim, and the run reads none) → parked (a sleep or wait ended the
 * run: every later call throws the same ParkError). Names are unique within a
 * job across steps, sleeps and waits; a name used twice in one run is an
 * error, so is a name recorded by an earlier run as another kind.
 *
 * A step records only after `fn` resolves, fenced on the run's claim
 * (queue/steps.ts), and ctx.step returns once the record has committed. A
 * crash between fn's side effect and the record runs fn again in the next
 * run: steps are at least once, and `key(name)` gives fn a key to make its
 * side effect idempotent. What ctx.step returns is the recorded JSON value
 * (JSON.parse of what was written), in the run that records it as in every
 * later run that replays it, so both see the same value (a Date comes back as
 * its ISO text in both).
 *
 * Times compared with a recorded wake time come from the database's clock
 * (read with the records, then advanced by this thread's monotonic clock), the
 * clock that decided when the job was due.
 */
import type pg from 'pg';
import { parseDuration } from '../duration.ts';
import { recordStep, recordsOf, type StepRecord } from '../queue/steps.ts';
import { describe } from './convert.ts';
import { jsonbRefusal } from './report.ts';
import type { DurableReport, WorkerSetup } from './protocol.ts';
import type { WaitResult } from './types.ts';
import { ParkError, StepError, type Park } from './step_errors.ts';

export { parkedError } from './step_errors.ts';
import { inStepSpan } from './step_span.ts';
import { createStepReads, type StepReads } from './step_reads.ts';

export interface StepEnv {
  db(): pg.Pool;
  schema: string;
  /** The thread's gathered reads: runs' records and waits' decisions (step_reads.ts). */
  reads: StepReads;
  /** jobs.maxSteps: records of one job at most. */
  maxSteps: number;
  /** jobs.maxStepResultBytes: a step result's JSON at most. */
  maxResultBytes: number;
}

/** The StepEnv of a thread set up with `setup`, its tasks' pool opened by `db`. */
export function stepEnvOf(setup: WorkerSetup, db: () => pg.Pool): StepEnv {
  return {
    db,
    schema: setup.taskConfig.schema,
    reads: createStepReads(db, setup.taskConfig.schema),
    maxSteps: setup.maxSteps,
    maxResultBytes: setup.maxStepResultBytes,
  };
}

export interface StepRun {
  id: string;
  token: string;
  attempt: number;
  /** The job's records as the supervisor read them after the claim: the run reads none itself. */
  claimedSteps?: ClaimedSteps;
}

/**
 * A job's records sent with it (supervisor/claim/claimed_steps.ts): JSON text,
 * the database's clock when they were sent (ms since the epoch) and this
 * thread's performance.now() when they arrived.
 */
export interface ClaimedSteps {
  text: string;
  nowMs: number;
  at: number;
}

interface Loaded {
  records: Map<string, StepRecord>;
  /** The database's clock at the read, and this thread's performance.now() then. */
  nowMs: number;
  at: number;
  /** The sleep or wait record of the latest park (the one this run resumes from). */
  resumed?: StepRecord;
}

export class DurableSteps {
  private loading?: Promise<Loaded>;
  private readonly used = new Set<string>();
  /** Records of the job: loaded plus recorded by this run. */
  private count = 0;
  private parked?: ParkError;
  readonly report: DurableReport = { steps: 0 };

  constructor(
    private readonly run: StepRun,
    private readonly env: StepEnv,
  ) {}

  /** The park that ended this run, if one did. */
  get park(): Park | undefined {
    return this.parked?.park;
  }

  /** The idempotency key of step `name` of this job: the same in every run of it. */
  key(name: string): string {
    return `jobvisor:${this.run.id}:${name}`;
  }

  async step<T>(name: string, fn: (step: { key: string }) => T | Promise<T>): Promise<T> {
    this.claim(name);
    if (typeof fn !== 'function')
      throw new StepError('StepNameInvalid', `ctx.step("${name}", fn): fn must be a function`);
    const loaded = await this.load();
    const rec = this.recorded(loaded, name, 'step');
    if (rec) return inStepSpan(name, this.run.attempt, true, () => Promise.resolve(rec.result as T));
    this.reserve(name);
    return inStepSpan(name, this.run.attempt, false, async () => {
      const started = performance.now();
      let value: T;
      try {
        value = await fn({ key: this.key(name) });
      } catch (err) {
        this.count--;
        throw err;
      }
      const ms = performance.now() - started;
      const json = this.encode(name, value);
      const held = await recordStep(this.env.db(), this.env.schema, { ...this.run, name, result: json, ms });
      if (!held) throw lost(name);
      this.report.steps++;
      return (json === null ? undefined : JSON.parse(json)) as T;
    });
  }

  async sleep(name: string, until: string | number | Date): Promise<void> {
    this.claim(name);
    const untilMs = until instanceof Date ? until.getTime() : null;
    if (untilMs !== null && !Number.isFinite(untilMs))
      throw new StepError('WaitTimeoutInvalid', `ctx.sleep("${name}", date): the date is invalid`);
    const delayMs = untilMs === null ? parseDuration(until as string | number) : 0;
    const loaded = await this.load();
    const rec = this.recorded(loaded, name, 'sleep');
    const now = dbNow(loaded);
    if (rec) {
      if (rec.wakeMs === null || rec.wakeMs <= now) return this.resumedFrom(loaded, rec, now);
      this.parkWith({ kind: 'sleep', name, untilMs: rec.wakeMs, delayMs: 0 });
    }
    if (untilMs !== null ? untilMs <= now : delayMs === 0) return;
    this.reserve(name);
    this.parkWith({ kind: 'sleep', name, untilMs, delayMs });
  }

  async waitFor<T = unknown>(name: string, options: { timeout: string | number | Date }): Promise<WaitResult<T>> {
    this.claim(name);
    const timeout = (options as { timeout?: unknown } | undefined)?.timeout;
    const untilMs = timeout instanceof Date ? timeout.getTime() : null;
    let delayMs = 0;
    try {
      if (untilMs === null) delayMs = parseDuration(timeout as string | number);
      else if (!Number.isFinite(untilMs)) throw new RangeError('the date is invalid');
    } catch (err) {
      throw new StepError(
        'WaitTimeoutInvalid',
        `ctx.waitFor("${name}", { timeout }): timeout must be a duration ("30s", "2d", ms) or a Date; got ${describe(timeout)}`,
        { cause: err },
      );
    }
    const loaded = await this.load();
    const rec = this.recorded(loaded, name, 'wait');
    if (rec?.finished) return rec.result as WaitResult<T>;
    if (!rec) this.reserve(name);
    this.checkOpen();
    const decided = await this.env.reads.takeWait({ id: this.run.id, token: this.run.token, name });
    if (!decided.held) throw lost(name);
    if (decided.result) {
      const waits = (this.report.waits ??= { signal: 0, timeout: 0 });
      if (decided.result.received) waits.signal++;
      else {
        waits.timeout++;
        if (decided.pastDeadlineMs !== null) this.report.lateMs ??= Math.max(0, decided.pastDeadlineMs);
      }
      return decided.result as WaitResult<T>;
    }
    return this.parkWith({ kind: 'wait', name, untilMs: rec?.wakeMs ?? untilMs, delayMs });
  }

  /** A name for this run: valid, and not used before in it. Synchronous, so parallel calls are caught. */
  private claim(name: string): void {
    this.checkOpen();
    if (typeof name !== 'string' || name.length === 0 || name.length > 200 || name.includes('\u0000'))
      throw new StepError(
        'StepNameInvalid',
        `a step name must be a string of 1 to 200 characters, got ${describe(name)}`,
      );
    if (this.used.has(name))
      throw new StepError('StepNameTaken', `the step name "${name}" is used twice in one run of job ${this.run.id}`);
    this.used.add(name);
  }

  private recorded(loaded: Loaded, name: string, kind: StepRecord['kind']): StepRecord | undefined {
    const rec = loaded.records.get(name);
    if (rec && rec.kind !== kind)
      throw new StepError(
        'StepNameTaken',
        `"${name}" is recorded as a ${rec.kind} of job ${this.run.id}; a ${kind} cannot use the same name`,
      );
    return rec;
  }

  /** Counts a new record against jobs.maxSteps. */
  private reserve(name: string): void {
    if (this.count >= this.env.maxSteps)
      throw new StepError(
        'TooManySteps',
        `job ${this.run.id} has ${this.count} steps, sleeps and waits recorded, the most jobs.maxSteps (${this.env.maxSteps}) allows, so "${name}" cannot be recorded`,
      );
    this.count++;
  }

  private encode(name: string, value: unknown): string | null {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch (err) {
      throw new StepError('StepResultNotJson', `the result of step "${name}" is not JSON: ${describe(err)}`);
    }
    if (json === undefined) return null;
    const refused = jsonbRefusal(json);
    if (refused) throw new StepError('StepResultNotJson', `the result of step "${name}" cannot be stored: ${refused}`);
    const bytes = Buffer.byteLength(json);
    if (bytes > this.env.maxResultBytes)
      throw new StepError(
        'StepResultTooLarge',
        `the result of step "${name}" is ${bytes} bytes of JSON, over jobs.maxStepResultBytes (${this.env.maxResultBytes}); store large output elsewhere and return a reference`,
      );
    return json;
  }

  private load(): Promise<Loaded> {
    const claimed = this.run.claimedSteps;
    this.loading ??= claimed
      ? Promise.resolve(this.loaded(recordsOf(claimed.text), claimed.nowMs, claimed.at))
      : this.env.reads.load(this.run).then((l) => {
          if (!l.held) throw lost('the job');
          return this.loaded(l.records, l.nowMs, performance.now());
        });
    return this.loading;
  }

  private loaded(list: StepRecord[], nowMs: number, at: number): Loaded {
    const records = new Map(list.map((r) => [r.name, r]));
    this.count += records.size;
    let resumed: StepRecord | undefined;
    for (const r of list) if (r.kind !== 'step' && (!resumed || r.startedMs > resumed.startedMs)) resumed = r;
    return { records, nowMs, at, resumed };
  }

  private resumedFrom(loaded: Loaded, rec: StepRecord, now: number): void {
    if (loaded.resumed === rec && rec.wakeMs !== null) this.report.lateMs ??= Math.max(0, now - rec.wakeMs);
  }

  private parkWith(park: Park): never {
    this.parked = new ParkError(park);
    throw this.parked;
  }

  private checkOpen(): void {
    if (this.parked) throw this.parked;
  }
}

function dbNow(loaded: Loaded): number {
  return loaded.nowMs + (performance.now() - loaded.at);
}

function lost(what: string): StepError {
  return new StepError(
    'StepLeaseLost',
    `recording ${what === 'the job' ? 'steps' : `step "${what}"`} failed: this run no longer holds the job (its lease was lost, or it was cancelled), so nothing was recorded`,
  );
}
