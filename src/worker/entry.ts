/**
 * The Piscina worker: runs one session (see protocol.ts) per task. Jobs arrive
 * on the session's port; each runs as `task(payload, ctx)` with its own
 * AbortController; results go back batched per event-loop turn.
 *
 * The thread never imports the supervisor. A task that throws fails only its
 * job; one that kills the thread (process.exit, an uncaught error, out of
 * memory) ends the session, and the supervisor fails the jobs it held.
 */
import { performance } from 'node:perf_hooks';
import { workerData } from 'piscina';
import pino from 'pino';
import pg from 'pg';
import { createLoader } from './loader.ts';
import type { FromWorker, JobMessage, JobResult, SessionTask, TaskError, ToWorker, WorkerSetup } from './protocol.ts';
import type { TaskContext } from './types.ts';

const setup = workerData as WorkerSetup;
const log = pino({ name: 'jobvisor', level: setup.logLevel, base: { supervisor: setup.supervisor } }, pino.destination({ dest: 1, sync: true }));
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

export default function session({ port }: SessionTask): Promise<void> {
  const running = new Map<string, RunningJob>();
  let outbox: JobResult[] = [];
  let flushing = false;
  let ended = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));

  const flush = () => {
    flushing = false;
    if (outbox.length > 0) {
      port.postMessage({ type: 'results', results: outbox } satisfies FromWorker);
      outbox = [];
    }
    if (ended && running.size === 0) {
      port.close();
      finish();
    }
  };
  const report = (result: JobResult) => {
    outbox.push(result);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };

  async function runJob(job: JobMessage, handle: RunningJob) {
    const started = performance.now();
    try {
      let payload: unknown;
      try {
        payload = JSON.parse(job.payload);
      } catch (err) {
        throw Object.assign(new Error(`payload is not valid JSON: ${(err as Error).message}`), { permanent: true });
      }
      const task = await loader.get(job.kind);
      // The logger and the AbortController are made on first use: most jobs of a
      // busy queue never touch them, and each costs microseconds per job.
      let childLog: TaskContext['log'] | undefined;
      const ctx: TaskContext = {
        job: { id: job.id, kind: job.kind, queue: job.queue, attempt: job.attempt, maxAttempts: job.maxAttempts },
        get signal() {
          handle.controller ??= new AbortController();
          return handle.controller.signal;
        },
        get log() {
          childLog ??= log.child({ jobId: job.id, kind: job.kind, queue: job.queue, attempt: job.attempt });
          return childLog;
        },
        get db() {
          return taskDb();
        },
        config: setup.taskConfig,
      };
      await task(payload, ctx);
      report({ id: job.id, attempt: job.attempt, ok: true, runMs: performance.now() - started });
    } catch (err) {
      report({ id: job.id, attempt: job.attempt, ok: false, runMs: performance.now() - started, error: toTaskError(err) });
    } finally {
      running.delete(job.id);
      if (ended && running.size === 0 && !flushing) flush();
    }
  }

  port.on('message', (message: ToWorker) => {
    switch (message.type) {
      case 'run':
        for (const job of message.jobs) {
          const handle: RunningJob = {};
          running.set(job.id, handle);
          void runJob(job, handle);
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
  return done;
}
