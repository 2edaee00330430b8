/**
 * The Piscina worker: runs one session (see protocol.ts) per task. Jobs arrive
 * on the session's port; each runs as `task(payload, ctx)` with its own
 * AbortController; results go back batched per event-loop turn.
 *
 * The thread never imports the supervisor. A task that throws fails only its
 * job; one that kills the thread (process.exit, an uncaught error, out of
 * memory) ends the session, and the supervisor fails the jobs it held.
 */
import { workerData } from 'piscina';
import pino from 'pino';
import pg from 'pg';
import { serializeError } from '../log.ts';
import { createLoader } from './loader.ts';
import type { FromWorker, JobBatch, ResultBatch, SessionTask, TaskError, ToWorker, WorkerSetup } from './protocol.ts';
import type { Task, TaskContext } from './types.ts';

const setup = workerData as WorkerSetup;
const log = pino({ name: 'jobvisor', level: setup.logLevel, base: { supervisor: setup.supervisor }, serializers: { err: serializeError } }, pino.destination({ dest: 1, sync: true }));
const loader = createLoader([setup.userTasksDir, setup.builtinTasksDir].filter(Boolean));
let db: pg.Pool | undefined;

/** The pool tasks get as ctx.db: opened on first use, shared by the thread's jobs. */
function taskDb(): pg.Pool {
  if (!db) {
    db = new pg.Pool({ connectionString: setup.databaseUrl, max: setup.dbPoolSize, application_name: 'jobvisor-task', idleTimeoutMillis: 10_000 });
    db.on('error', (err) => log.warn({ err }, 'idle task database connection failed'));
  }
  return db;
}

function toTaskError(err: unknown): TaskError {
  if (err instanceof Error) {
    const e = err as Error & { permanent?: unknown; retryInMs?: unknown };
    return {
      name: e.name,
      message: e.message,
      stack: e.stack?.split('\n').slice(0, 8).join('\n'),
      permanent: e.permanent === true,
      retryInMs: typeof e.retryInMs === 'number' && Number.isFinite(e.retryInMs) && e.retryInMs >= 0 ? e.retryInMs : null,
    };
  }
  return { name: 'NonError', message: `task threw a non-Error value: ${safeString(err)}`, permanent: false, retryInMs: null };
}

function safeString(value: unknown): string {
  try {
    return typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A job running in this session; its AbortController is made when first needed. */
interface RunningJob {
  controller?: AbortController;
}

export default function session({ port, queue }: SessionTask): Promise<void> {
  const running = new Map<string, RunningJob>();
  let out: ResultBatch = emptyBatch();
  let flushing = false;
  let ended = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const flush = () => {
    flushing = false;
    if (out.ids.length > 0) {
      port.postMessage(out satisfies FromWorker);
      out = emptyBatch();
    }
    if (ended && running.size === 0) {
      port.close();
      finish();
    }
  };
  const report = (id: string, attempt: number, runMs: number, error: TaskError | null) => {
    const i = out.ids.push(id) - 1;
    out.attempts.push(attempt);
    out.runMs.push(runMs);
    if (error) {
      out.errors ??= new Array<TaskError | null>(i).fill(null);
      out.errors.push(error);
    } else out.errors?.push(null);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };
  const settled = (id: string) => {
    running.delete(id);
    if (ended && running.size === 0 && !flushing) flush();
  };

  function runJob(batch: JobBatch, i: number, handle: RunningJob): void {
    const id = batch.ids[i] as string;
    const kind = batch.kinds[i] as string;
    const attempt = batch.attempts[i] as number;
    const started = performance.now();
    const fail = (err: unknown) => {
      report(id, attempt, performance.now() - started, toTaskError(err));
      settled(id);
    };
    try {
      const payload = parsePayload(batch.payloads[i] as string);
      // The logger and the AbortController are made on first use: most jobs of a
      // busy queue never touch them, and each costs microseconds per job.
      let childLog: TaskContext['log'] | undefined;
      const ctx: TaskContext = {
        job: { id, kind, queue, attempt, maxAttempts: batch.maxAttempts[i] as number },
        get signal() {
          handle.controller ??= new AbortController();
          return handle.controller.signal;
        },
        get log() {
          childLog ??= log.child({ jobId: id, kind, queue, attempt });
          return childLog;
        },
        get db() {
          return taskDb();
        },
        config: setup.taskConfig,
      };
      const run = (task: Task) => {
        const result = task(payload, ctx) as PromiseLike<unknown> | undefined;
        if (typeof result?.then === 'function') {
          result.then(() => {
            report(id, attempt, performance.now() - started, null);
            settled(id);
          }, fail);
        } else {
          report(id, attempt, performance.now() - started, null);
          settled(id);
        }
      };
      // Loaded tasks run without a detour through a promise.
      const task = loader.loaded(kind);
      if (task) run(task);
      else loader.get(kind).then((t) => {
        try {
          run(t);
        } catch (err) {
          fail(err);
        }
      }, fail);
    } catch (err) {
      fail(err);
    }
  }

  port.on('message', (message: ToWorker) => {
    switch (message.type) {
      case 'run':
        for (let i = 0; i < message.ids.length; i++) {
          const handle: RunningJob = {};
          running.set(message.ids[i] as string, handle);
          runJob(message, i, handle);
        }
        break;
      case 'abort': {
        const reason = new Error(message.reason === 'timeout' ? 'job timed out' : message.reason === 'lease-lost' ? 'lease lost' : 'supervisor shutting down');
        reason.name = message.reason === 'timeout' ? 'TimeoutError' : 'AbortError';
        const handle = running.get(message.id);
        if (handle) {
          handle.controller ??= new AbortController();
          handle.controller.abort(reason);
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
  return { type: 'results', ids: [], attempts: [], runMs: [] };
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw Object.assign(new Error(`payload is not valid JSON: ${(err as Error).message}`), { permanent: true });
  }
}
