/**
 * A hand-built task context for calling a task function directly, as the worker
 * entry would: a real pino logger, a real AbortSignal and a real pg Pool (one that
 * is never used does not connect).
 */
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { SnoozeError } from '../../src/worker/errors.ts';
import type { JobInfo, TaskConfig, TaskContext } from '../../src/worker/types.ts';

export interface TaskContextOptions {
  job?: Partial<JobInfo>;
  config?: {
    thumbnails?: Partial<TaskConfig['thumbnails']>;
    reports?: Partial<TaskConfig['reports']>;
    schema?: string;
  };
  db?: pg.Pool;
  signal?: AbortSignal;
  /** Receives every log line (parsed JSON) at level debug and above. */
  onLog?: (line: Record<string, unknown>) => void;
  /** Receives every ctx.progress() value. */
  onProgress?: (value: unknown) => void;
}

export function taskContext(options: TaskContextOptions = {}): TaskContext {
  const onLog = options.onLog;
  const log = onLog
    ? pino(
        { level: 'debug' },
        new Writable({
          write(chunk: Buffer, _encoding, callback) {
            for (const line of chunk.toString('utf8').split('\n'))
              if (line) onLog(JSON.parse(line) as Record<string, unknown>);
            callback();
          },
        }),
      )
    : pino({ level: process.env.LOG_LEVEL ?? 'silent' });
  const job: JobInfo = { id: '1', kind: 'test', queue: 'default', attempt: 1, maxAttempts: 8, ...options.job };
  return {
    job,
    signal: options.signal ?? new AbortController().signal,
    log: log.child({ jobId: job.id, kind: job.kind }),
    db: options.db ?? new pg.Pool({ max: 1 }),
    config: {
      thumbnails: { dir: '.jobvisor/thumbnails', format: 'webp', ...options.config?.thumbnails },
      reports: { dir: '.jobvisor/reports', ...options.config?.reports },
      schema: options.config?.schema ?? 'jobvisor',
    },
    snooze(delay) {
      throw new SnoozeError(delay);
    },
    progress(value) {
      options.onProgress?.(value);
    },
    parents() {
      return Promise.resolve([]);
    },
    async *eachParent() {},
    // Outside a worker thread there is no claim to record steps against: fn runs every time.
    step(name, fn) {
      return Promise.resolve(fn({ key: `jobvisor:${job.id}:${name}` }));
    },
    sleep() {
      return Promise.reject(new Error('ctx.sleep needs a worker thread (use a supervisor)'));
    },
    waitFor() {
      return Promise.reject(new Error('ctx.waitFor needs a worker thread (use a supervisor)'));
    },
  };
}
