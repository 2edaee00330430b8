/**
 * The Piscina worker: runs one session (see protocol.ts) per task. Jobs arrive
 * on the session's port; each runs as `task(payload, ctx)` with its own
 * AbortController; results go back batched per event-loop turn.
 *
 * The thread never imports the supervisor. A task that throws fails only its
 * job; one that kills the thread (process.exit, an uncaught error, out of
 * memory) ends the session, and the supervisor fails the jobs it held.
 */
import { parentPort, threadId } from 'node:worker_threads';
import { workerData } from 'piscina';
import type pg from 'pg';
import { runCall, type CallHost } from './batch_run.ts';
import { toTaskError, withoutSecrets } from './convert.ts';
import { catchEscapes, currentJob } from './escapes.ts';
import { createLoader } from './loader.ts';
import { parsePayload } from './payload.ts';
import { createPayloadReader } from './payload_read.ts';
import { ProgressThrottle } from './progress.ts';
import { encodeResult } from './report.ts';
import { createTaskPool, stopJobStatements } from './task_db.ts';
import { missedWindow, reachStartWindow } from './start_window.ts';
import { abortReason } from './abort_reason.ts';
import { threadLogger } from './thread_log.ts';
import { runTask } from './tracing.ts';
import { parkedError, stepEnvOf } from './steps.ts';
import { JobRun, type RunOwner } from './job_run.ts';
import type {
  FromWorker,
  JobBatch,
  ProgressBatch,
  ResultBatch,
  SessionTask,
  TaskError,
  ThreadLoaded,
  ToWorker,
  WorkerSetup,
} from './protocol.ts';

const setup = workerData as WorkerSetup;
/** A rate-limited job's start window: [notBeforeMs, notAfterMs] (start_window.ts). */
type Window = [number, number];
const log = threadLogger(setup);
/** Payloads the claims did not carry (payload_read.ts), read through ctx.db's pool. */
const readPayload = createPayloadReader({
  db: taskDb,
  schema: setup.taskConfig.schema,
  maxPayloadBytes: setup.maxPayloadBytes,
  reads: setup.dbPoolSize - 1,
});
const loader = createLoader(setup.tasks);
let db: pg.Pool | undefined;

/** The pool tasks get as ctx.db: opened on first use, shared by the thread's jobs. */
function taskDb(): pg.Pool {
  if (!db) {
    db = createTaskPool({ connectionString: setup.databaseUrl, max: setup.dbPoolSize });
    db.on('error', (err) => log.warn({ err }, 'idle task database connection failed'));
  }
  return db;
}

const stepEnv = stepEnvOf(setup, taskDb);

/** The jobs of the thread's current session, for blaming escaped errors. */
let inFlight: Map<string, JobRun> | undefined;
catchEscapes(log, () => [...(inFlight?.values() ?? [])]);

export default function session({ port, queue }: SessionTask): Promise<void> {
  const running = new Map<string, JobRun>();
  inFlight = running;
  let out: ResultBatch = emptyBatch();
  let progressOut: ProgressBatch | undefined;
  let flushing = false;
  let ended = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const flush = () => {
    flushing = false;
    // Before the results: a run's progress is taken while the run is still held.
    if (progressOut) {
      port.postMessage(progressOut satisfies FromWorker);
      progressOut = undefined;
    }
    if (out.tokens.length > 0) {
      port.postMessage(out satisfies FromWorker);
      out = emptyBatch();
    }
    if (ended && running.size === 0) {
      port.close();
      finish();
    }
  };

  const wake = () => {
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };

  const throttle = new ProgressThrottle((token, json) => {
    progressOut ??= { type: 'progress', tokens: [], values: [] };
    progressOut.tokens.push(token);
    progressOut.values.push(json);
    wake();
  });

  /**
   * Records a settled job, once; results leave once per turn of the event loop.
   * A success carries its return value (JSON text, if any) and its last progress value.
   */
  const settle = (run: JobRun, error: TaskError | null, result?: string): boolean => {
    if (running.get(run.token) !== run) return false;
    const i = out.tokens.push(run.token) - 1;
    out.runMs.push(performance.now() - run.started);
    if (error) {
      out.errors ??= new Array<TaskError | null>(i).fill(null);
      out.errors.push(error);
    } else out.errors?.push(null);
    const progress = throttle.take(run.token);
    if (run.durable) (out.durable ??= [])[i] = run.durable.report;
    if (!error) {
      // Sparse: a batch of runs that report nothing allocates nothing.
      if (result !== undefined) (out.results ??= [])[i] = result;
      if (progress !== undefined) (out.progress ??= [])[i] = progress;
    }
    running.delete(run.token);
    wake();
    return true;
  };
  const owner: RunOwner = {
    settle,
    progress(run: JobRun, json: string): void {
      if (running.get(run.token) === run) throttle.report(run.token, json);
    },
    log,
    db: taskDb,
    config: setup.taskConfig,
    steps: stepEnv,
  };

  /** A batch task's call (batch_run.ts): its jobs are held like any other, and settle one by one. */
  const callHost: CallHost<JobRun> = {
    task: (kind) => loader.loaded(kind) ?? loader.get(kind),
    settle,
    log,
    db: taskDb,
    config: setup.taskConfig,
    maxResultBytes: setup.maxResultBytes,
    readPayload: (run, signal) => readPayload(run, signal),
  };
  const hold = ({ ids, tokens, kinds, attempts, maxAttempts, steps, stepsNowMs }: JobBatch): JobRun[] =>
    ids.map((id, i) => {
      const run = new JobRun(
        owner,
        tokens[i] as string,
        id,
        kinds[i] as string,
        queue,
        attempts[i] as number,
        maxAttempts[i] as number,
      );
      const text = steps?.[i];
      if (text !== undefined) run.claimedSteps = { text, nowMs: stepsNowMs?.[i] as number, at: performance.now() };
      running.set(run.token, run);
      return run;
    });

  /** Runs one job to its end; never throws. */
  async function execute(run: JobRun, text: string | null, traceContext?: string, window?: Window): Promise<void> {
    let payload: unknown;
    try {
      payload = parsePayload(text ?? (await readPayload(run, run.signal)));
      // A loaded task runs without a detour through the loader's promise.
      const task = loader.loaded(run.kind) ?? (await loader.get(run.kind));
      if (window) {
        const lateMs = await reachStartWindow(window[0], window[1]);
        if (lateMs !== null) {
          settle(run, missedWindow(lateMs));
          return;
        }
      }
      const value = await runTask(task, payload, run, traceContext);
      const park = run.durable?.park; // a run that slept or waited ends there (step_errors.ts)
      if (park) settle(run, parkedError(park));
      else settle(run, null, value === undefined ? undefined : encodeResult(value, setup.maxResultBytes));
    } catch (err) {
      // An error that quotes the task's input quotes no secret of it (secrets.ts).
      settle(run, run.durable?.park ? parkedError(run.durable.park) : withoutSecrets(toTaskError(err), payload));
    }
  }

  port.on('message', (message: ToWorker) => {
    switch (message.type) {
      case 'run': {
        const { ids, payloads, traceContexts, notBeforeMs, notAfterMs } = message;
        const runs = hold(message);
        for (let i = 0; i < ids.length; i++) {
          const run = runs[i] as JobRun;
          const notAfter = notAfterMs?.[i];
          const window: Window | undefined =
            notAfter === undefined ? undefined : [notBeforeMs?.[i] ?? -Infinity, notAfter];
          void currentJob.run(run, execute, run, payloads[i] ?? null, traceContexts?.[i], window);
        }
        break;
      }
      case 'call':
        void runCall(hold(message), message, callHost);
        break;
      case 'abort': {
        const reason = abortReason(message.reason);
        const run = running.get(message.token);
        if (run) {
          run.controller ??= new AbortController();
          run.controller.abort(reason);
          // pg cannot abort a statement the task awaits: the server is asked to (task_db.ts).
          const connections = stopJobStatements(run);
          if (connections > 0) run.log.warn({ connections }, 'job stopped: its ctx.db statements are cancelled');
        }
        break;
      }
      case 'end':
        ended = true;
        if (running.size === 0 && !flushing) flush();
        break;
    }
  });
  port.postMessage({ type: 'ready' } satisfies FromWorker);
  return done;
}

function emptyBatch(): ResultBatch {
  return { type: 'results', tokens: [], runMs: [] };
}

// After the require() that loads this module has returned (supervisor/threads.ts says why).
setImmediate(() => parentPort?.postMessage({ jobvisorThreadLoaded: threadId } satisfies ThreadLoaded));
